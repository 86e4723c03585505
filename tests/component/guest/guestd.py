# SPDX-License-Identifier: LGPL-2.1-or-later
"""Test helpers for corehint-guestd: a fake sysfs/proc tree, a UNIX socket standing in for the
virtio-serial port's host side, and the daemon started through $COREHINT_WRAP."""

import json
import os
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import time

WRAPPED = bool(os.environ.get("COREHINT_WRAP", "").strip())
# valgrind runs the daemon ~20-50x slower: scale every wait, never the assertions.
SLOW = 10.0 if WRAPPED else 1.0


class Fail(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Fail(what)


def wait_for(pred, timeout, what, step=0.01):
    """Poll pred() until it is true; a failure names what was awaited."""
    deadline = time.monotonic() + timeout * SLOW
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() > deadline:
            raise Fail("timed out waiting for " + what)
        time.sleep(step)


class Tree:
    """<root>/sys/devices/system/cpu/{online,preferred,cpuN/topology/...} and <root>/proc/stat."""

    def __init__(self, ncpus=4, smt=1, preferred=True):
        # tmpfs when there is one: sysfs-like cost per write, no journal (ext4 makes the
        # flood test measure the disk).
        base = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
        self.root = tempfile.mkdtemp(prefix="guestd-test-", dir=base)
        self.sys = os.path.join(self.root, "sys")
        self.proc = os.path.join(self.root, "proc")
        self.state = os.path.join(self.root, "run")  # --state-dir: never the real /run
        self.cpu = os.path.join(self.sys, "devices/system/cpu")
        os.makedirs(self.cpu)
        os.makedirs(self.proc)
        self.ncpus = ncpus
        self.online = list(range(ncpus))
        for c in range(ncpus):
            topo = os.path.join(self.cpu, "cpu%d" % c, "topology")
            os.makedirs(topo)
            first = c - c % smt
            sib = "%d" % first if smt == 1 else "%d-%d" % (first, first + smt - 1)
            self.write(os.path.join(topo, "thread_siblings_list"), sib + "\n")
        self.write(os.path.join(self.cpu, "online"), "0-%d\n" % (ncpus - 1))
        if preferred:
            self.write(self.preferred_path, "0-%d\n" % (ncpus - 1))
        self.counters = {c: [0] * 10 for c in range(ncpus)}
        self.tick_stat(0, 0)

    @property
    def preferred_path(self):
        return os.path.join(self.cpu, "preferred")

    @staticmethod
    def write(path, text):
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.rename(tmp, path)

    def preferred(self):
        with open(self.preferred_path) as f:
            return f.read()

    def set_online(self, text):
        self.write(os.path.join(self.cpu, "online"), text + "\n")

    def tick_stat(self, busy, steal, cpus=None):
        """Advance every online CPU by busy user ticks, steal ticks and the rest idle (100)."""
        for c in cpus if cpus is not None else range(self.ncpus):
            k = self.counters[c]
            k[0] += busy
            k[7] += steal
            k[3] += max(0, 100 - busy - steal)
        lines = ["cpu  " + " ".join(str(sum(self.counters[c][i] for c in self.counters))
                                    for i in range(10))]
        for c in range(self.ncpus):
            lines.append("cpu%d " % c + " ".join(str(v) for v in self.counters[c]))
        lines += ["intr 0", "ctxt 0", "btime 0", "processes 1", "procs_running 1"]
        self.write(os.path.join(self.proc, "stat"), "\n".join(lines) + "\n")

    def cleanup(self):
        shutil.rmtree(self.root, ignore_errors=True)


class Host:
    """The host side of the port: a listening UNIX socket and at most one connection."""

    def __init__(self, path):
        self.path = path
        self.listener = None
        self.conn = None
        self.buf = b""
        self.listen()

    def listen(self):
        if os.path.exists(self.path):
            os.unlink(self.path)
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(self.path)
        self.listener.listen(4)

    def accept(self, timeout=5):
        r, _, _ = select.select([self.listener], [], [], timeout * SLOW)
        check(r, "the daemon to connect to the port socket")
        self.conn, _ = self.listener.accept()
        self.buf = b""
        return self.conn

    def close(self, listener_too=False):
        if self.conn:
            self.conn.close()
            self.conn = None
        if listener_too and self.listener:
            self.listener.close()
            self.listener = None
            os.unlink(self.path)

    def send_raw(self, data):
        self.conn.sendall(data)

    def send(self, obj):
        self.send_raw((json.dumps(obj, separators=(",", ":")) + "\n").encode())

    def hint(self, seq, cpus, lease_ms=5000, **extra):
        m = {"v": 1, "type": "hint", "seq": seq, "cpus": cpus, "lease_ms": lease_ms}
        m.update(extra)
        self.send(m)

    def recv(self, timeout=5):
        """The next message, or Fail after timeout."""
        deadline = time.monotonic() + timeout * SLOW
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            check(left > 0, "a message from the daemon")
            r, _, _ = select.select([self.conn], [], [], left)
            if not r:
                continue
            data = self.conn.recv(65536)
            check(data, "a message, but the daemon closed the connection")
            self.buf += data
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def expect(self, timeout=5, **fields):
        """Skip messages until one matches every given field; return it."""
        deadline = time.monotonic() + timeout * SLOW
        seen = []
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Fail("no message with %s; saw %s" % (fields, seen[-5:]))
            try:
                m = self.recv(left / SLOW)
            except Fail:
                raise Fail("no message with %s; saw %s" % (fields, seen[-5:]))
            if all(m.get(k) == v for k, v in fields.items()):
                return m
            seen.append(m)

    def expect_each(self, *patterns, timeout=5):
        """Skip messages until each pattern (a dict of fields) has matched one, in any order;
        return the matches in the patterns' order."""
        deadline = time.monotonic() + timeout * SLOW
        found, seen = [None] * len(patterns), []
        while None in found:
            left = deadline - time.monotonic()
            try:
                check(left > 0, "time left")
                m = self.recv(left / SLOW)
            except Fail:
                raise Fail("no messages with %s; saw %s" % (
                    [p for p, f in zip(patterns, found) if f is None], seen[-5:]))
            for i, p in enumerate(patterns):
                if found[i] is None and all(m.get(k) == v for k, v in p.items()):
                    found[i] = m
                    break
            else:
                seen.append(m)
        return found

    def no_message(self, within):
        """Assert nothing arrives within `within` seconds (used only to prove silence)."""
        r, _, _ = select.select([self.conn], [], [], within)
        check(not r and b"\n" not in self.buf, "no message, but got one")


class Daemon:
    def __init__(self, tree, args, log_name="guestd.log", env=None):
        binary = os.environ["GUESTD"]
        wrap = os.environ["RUN_WRAPPED"]
        self.log_path = os.path.join(tree.root, log_name)
        self.log = open(self.log_path, "w")
        cmd = [wrap, binary, "--sysfs-root", tree.sys, "--proc-root", tree.proc,
               "--state-dir", tree.state, "--config", os.path.join(tree.root, "none.conf"),
               "-v"] + args
        # none.conf does not exist: explicit --config of a missing file is an error, so create it.
        open(os.path.join(tree.root, "none.conf"), "a").close()
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self.log,
                                     env=dict(os.environ, **(env or {})))

    def rss_kib(self):
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def signal(self, sig):
        self.proc.send_signal(sig)

    def wait(self, timeout=10):
        try:
            return self.proc.wait(timeout * SLOW)
        except subprocess.TimeoutExpired:
            raise Fail("the daemon did not exit")

    def log_text(self):
        if not self.log.closed:
            self.log.flush()
        with open(self.log_path) as f:
            return f.read()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10 * SLOW)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def run_cases(cases, argv):
    """Run the named case (ctest runs them one by one) or all of them."""
    names = argv[1:] or list(cases)
    failed = 0
    for n in names:
        if n not in cases:
            print("unknown case", n)
            return 2
        t0 = time.monotonic()
        try:
            cases[n]()
            print("PASS %s (%.1f s)" % (n, time.monotonic() - t0))
        except Fail as e:
            failed += 1
            print("FAIL %s: %s" % (n, e))
    return 1 if failed else 0
