#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Component tests: the real corehint-guestd against a fake sysfs/proc tree and a UNIX socket
standing in for the virtio-serial port.  Usage: test-guestd.py [CASE...]; GUESTD names the
binary, RUN_WRAPPED the tests/lib/run-wrapped script (which honours $COREHINT_WRAP)."""

import functools
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from guestd import Daemon, Fail, Host, SLOW, Tree, WRAPPED, check, run_cases, wait_for  # noqa

CASES = {}


def case(ncpus=4, smt=1, preferred=True, args=(), connect=True, env=None):
    """Give the case a tree, a host socket and a running daemon connected to it."""
    def deco(fn):
        @functools.wraps(fn)
        def run():
            tree = Tree(ncpus, smt, preferred)
            host = Host(os.path.join(tree.root, "port.sock"))
            d = Daemon(tree, ["--port", host.path] + list(args), env=env)
            ok = False
            try:
                if connect:
                    host.accept()
                fn(tree, host, d)
                ok = True
            finally:
                d.stop()
                if not ok:
                    sys.stdout.write("--- daemon log (tail)\n" + d.log_text()[-4000:])
                host.close(listener_too=True)
                tree.cleanup()
        CASES[fn.__name__] = run
        return run
    return deco


def plain(fn):
    CASES[fn.__name__] = fn
    return fn


def guestd(*args, tree=None):
    cmd = [os.environ["RUN_WRAPPED"], os.environ["GUESTD"]] + list(args)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60 * SLOW)


@case()
def hello_on_connect(tree, host, d):
    m = host.recv()
    check(m["type"] == "hello" and m["role"] == "guest", "first message is a guest hello: %s" % m)
    check(m["online"] == "0-3" and m["writable"] is True, "hello reports online and writable")
    check(m.get("housekeeping") == "0-3", "hello reports the housekeeping CPUs: %s" % m)
    check(m["agent"].startswith("corehint-guestd/"), "agent names the daemon")
    s = host.expect(type="status")
    check(s["seq"] == 0 and s["mode"] == "fallback" and s["applied"] == "0-3",
          "initial status: no hint yet, fallback, full set: %s" % s)


@case()
def hint_applied(tree, host, d):
    host.expect(type="status")
    host.hint(1, "0-1", reason="contended")
    s = host.expect(type="status", seq=1)
    check(s["applied"] == "0-1" and s["mode"] == "host", "status after hint: %s" % s)
    check(tree.preferred() == "0-1\n", "preferred file written: %r" % tree.preferred())
    host.hint(2, "0,2-3")
    host.expect(type="status", seq=2, applied="0,2-3")
    check(tree.preferred() == "0,2-3\n", "second hint written")
    # The same set again: status (the lease is renewed) but nothing to write.
    before = os.stat(tree.preferred_path).st_mtime_ns
    host.hint(3, "0,2-3")
    host.expect(type="status", seq=3, applied="0,2-3", mode="host")
    check(os.stat(tree.preferred_path).st_mtime_ns == before, "an unchanged set is not rewritten")


@plain
def no_entropy_wait():
    """guestd never waits for the kernel's random pool: before a guest's pool is ready, a read
    of /dev/urandom or a blocking getrandom() makes the kernel generate entropy on every vCPU
    (json-c seeds its key hash that way at its first object, falling back to /dev/urandom when
    the non-blocking getrandom() finds the pool not ready; a TCG guest spent 1.1-1.4 s of both
    vCPUs in it when a host arrived).  Here the host's pool is ready, so the seed request shows
    as json-c's getrandom() (strace -k names the caller); glibc's own non-blocking request for
    malloc's key returns at once either way and is allowed."""
    tree = Tree()
    trace = os.path.join(tree.root, "trace")
    wrap = os.path.join(tree.root, "strace-wrap")
    with open(wrap, "w") as f:
        # strace instead of the run's wrapper (valgrind would add calls of its own); under
        # ptrace LeakSanitizer cannot run, so a sanitizer build leaves leaks to the other cases.
        f.write("#!/bin/sh\nexport ASAN_OPTIONS=\"${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0\"\n"
                "exec strace -f -qq -k -o %s -e trace=getrandom,open,openat "
                "-e signal=none \"$@\"\n" % trace)
    os.chmod(wrap, 0o755)
    host = Host(os.path.join(tree.root, "port.sock"))
    saved = os.environ["RUN_WRAPPED"]
    os.environ["RUN_WRAPPED"] = wrap
    try:
        d = Daemon(tree, ["--port", host.path, "--interval-ms", "100"])
    finally:
        os.environ["RUN_WRAPPED"] = saved
    try:
        host.accept(timeout=15)
        host.expect(type="hello")
        host.expect(type="status")
        # every path that builds or parses a JSON object: a hello, a hint, a refusal, junk
        host.send(hello(session="0123456789abcdef"))
        host.expect(type="hello")
        hint2(host, "0123456789abcdef", 1, "0-1")
        host.expect(type="status", seq=1, applied="0-1")
        host.send_raw(b'{"v":2,"type":"hint","seq":"x"}\nnot json\n')
        host.expect(type="error")
        # SIGTERM to the daemon, strace's child; strace exits with its status
        with open("/proc/%d/task/%d/children" % (d.proc.pid, d.proc.pid)) as f:
            os.kill(int(f.read().split()[0]), signal.SIGTERM)
        check(d.wait() == 0, "exit 0 on SIGTERM")
        calls, cur = [], None  # [syscall line, stack lines]
        with open(trace) as f:
            for line in f:
                if line.startswith(" > "):
                    if cur:
                        cur[1].append(line.strip())
                else:
                    cur = [line.strip(), []]
                    calls.append(cur)
        check(any(tree.preferred_path in c for c, _ in calls) and all(st for _, st in calls),
              "strace traced the daemon (its preferred-file writes) with stacks: %s" % calls[:3])
        bad = [c for c, st in calls
               if "/dev/urandom" in c or "/dev/random" in c or
               ("getrandom(" in c and ("GRND_NONBLOCK" not in c or any("json" in x for x in st)))]
        check(not bad, "no wait for, and no seed from, the kernel's random pool: %s" % bad)
    finally:
        if d.proc.poll() is None:
            d.stop()
        host.close(listener_too=True)
        tree.cleanup()


@case()
def invalid_hints(tree, host, d):
    host.expect(type="status")
    host.hint(5, "0-1")
    host.expect(type="status", seq=5)
    bad = [
        ({"v": 1, "type": "hint", "seq": 6, "cpus": "0,7", "lease_ms": 1000}, 6, "not-online"),
        ({"v": 1, "type": "hint", "seq": 5, "cpus": "0-2", "lease_ms": 1000}, 5, "stale-seq"),
        ({"v": 1, "type": "hint", "seq": 3, "cpus": "0-2", "lease_ms": 1000}, 3, "stale-seq"),
        ({"v": 1, "type": "hint", "seq": 8, "cpus": "2-1", "lease_ms": 1000}, 8, "bad-cpulist"),
        ({"v": 1, "type": "hint", "seq": 9, "cpus": "", "lease_ms": 1000}, 9, "bad-cpulist"),
        ({"v": 1, "type": "hint", "seq": 10, "cpus": "0"}, 10, "missing-field"),
        ({"v": 1, "type": "hint", "seq": 11, "cpus": "0", "lease_ms": 5}, 11, "bad-field"),
        ({"v": 3, "type": "hint", "seq": 12, "cpus": "0", "lease_ms": 1000}, 0,
         "unsupported-version"),
        ({"v": 1, "type": "hint", "session": "0000000000000001", "seq": 12, "cpus": "0",
          "lease_ms": 1000}, 12, "unknown-session"),
        ({"v": 1, "type": "frobnicate", "seq": 13}, 13, "unknown-type"),
        ([1, 2], 0, "not-object"),
    ]
    for msg, seq, code in bad:
        host.send(msg)
        e = host.expect(type="error")
        check(e["seq"] == seq and e["code"] == code,
              "%s -> error seq %d code %s, got %s" % (msg, seq, code, e))
        check(tree.preferred() == "0-1\n", "file unchanged after %s" % code)
    host.send_raw(b"{not json\n")
    e = host.expect(type="error")
    check(e["code"] == "bad-json" and e["seq"] == 0, "bad-json: %s" % e)
    host.send_raw(b'{"v":2,"type":"hint","seq":14,"pad":"' + b"x" * 33000 + b'"}\n')
    e = host.expect(type="error")
    check(e["code"] == "line-too-long" and e["seq"] == 0, "oversized line refused: %s" % e)
    host.send_raw(b'{"v":1,"type":"hint","seq":14,"pad":"' + b"x" * 5000 + b'"}\n')
    e = host.expect(type="error")
    check(e["code"] == "line-too-long" and e["seq"] == 0, "version 1 line over 4096: %s" % e)
    host.send_raw(b'{"v":1,"type":"hint\\u0000x","seq":15,"cpus":"0","lease_ms":1000}\n')
    e = host.expect(type="error")
    check(e["code"] == "bad-type", "type with an embedded NUL is not a hint: %s" % e)
    # An error from the host is never answered, even with a bad "v"; the daemon still works.
    host.send({"v": 1, "type": "error", "seq": 0, "code": "x", "message": "m"})
    host.send_raw(b'{"v":1,"type":"error"}\n')
    host.send_raw(b'{"v":0,"type":"error"}\n')
    host.send_raw(b'{"type":"error","seq":3}\n')
    host.hint(20, "0-2")
    m = host.recv()
    check(m["type"] == "status" and m["seq"] == 20, "no reply to errors; next hint applies: %s" % m)
    check(tree.preferred() == "0-2\n", "valid hint after the bad ones applied")
    # A flood of garbage: one error per line, but the log is rate-limited.
    host.send_raw(b"garbage\n" * 500)
    for _ in range(500):
        check(host.expect(type="error")["code"] == "bad-json", "one error per garbage line")
    logged = d.log_text().count("refused seq")
    check(logged < 100, "refusal log rate-limited (%d lines for ~515 refusals)" % logged)


@case(args=["--fallback", "none"])
def lease_expiry_and_return(tree, host, d):
    host.expect(type="status")
    host.hint(1, "0-1", lease_ms=300)
    host.expect(type="status", seq=1, mode="host")
    t0 = time.monotonic()
    s = host.expect(type="status", mode="fallback", timeout=3)
    waited = time.monotonic() - t0
    check(s["seq"] == 1, "fallback status keeps the last seq: %s" % s)
    check(s["applied"] == "0-3", "fallback none restores every online CPU: %s" % s)
    check(waited >= 0.25 or WRAPPED, "lease held for its lease_ms (%.3f s)" % waited)
    # The lease runs on CLOCK_BOOTTIME (7): a suspended guest's sleep counts against it.
    clocks = []
    for fd in os.listdir("/proc/%d/fd" % d.proc.pid):
        try:
            if os.readlink("/proc/%d/fd/%s" % (d.proc.pid, fd)) == "anon_inode:[timerfd]":
                with open("/proc/%d/fdinfo/%s" % (d.proc.pid, fd)) as f:
                    clocks += [int(l.split()[1]) for l in f if l.startswith("clockid:")]
        except OSError:
            pass
    check(clocks == [7], "one timerfd, on CLOCK_BOOTTIME: clockids %s" % clocks)
    check(tree.preferred() == "0-3\n", "file holds the full set")
    host.hint(2, "0")
    s = host.expect(type="status", seq=2)
    check(s["mode"] == "host" and s["applied"] == "0", "host mode again: %s" % s)
    # A renewed lease does not expire: hints every 100 ms for longer than one lease.
    for seq in range(3, 12):
        host.hint(seq, "0", lease_ms=300)
        s = host.expect(type="status", seq=seq)
        check(s["mode"] == "host", "renewed lease stays in host mode")
        time.sleep(0.1)  # pacing of the host's hints, not synchronisation


def hello(session=None, max_v=2):
    m = {"v": 1, "type": "hello", "role": "host", "agent": "test-host/2", "max_v": max_v}
    if session is not None:
        m["session"] = session
    elif max_v == 1:
        del m["max_v"]
    return m


def hint2(host, session, seq, cpus, lease_ms=5000):
    host.send({"v": 2, "type": "hint", "session": session, "seq": seq, "cpus": cpus,
               "lease_ms": lease_ms})


A, B = "5f0c1d9e2a7b4c03", "a41e93007c2d5b18"


@case(args=["--fallback", "none"])
def lease_expiry_sees_waiting_hint(tree, host, d):
    """A guest the host did not run for longer than the lease wakes with the lease's timer and
    a newer hint ready together: the hint wins, in whatever order the two are reported."""
    host.expect(type="status")
    host.hint(1, "0-1", lease_ms=500)
    host.expect(type="status", seq=1, mode="host")
    d.signal(signal.SIGSTOP)          # the vCPU is not run ...
    try:
        time.sleep(0.8)               # ... past the lease (the timer fires first) ...
        host.hint(2, "0-2", lease_ms=5000)   # ... and the next hint arrives meanwhile
        time.sleep(0.2)
    finally:
        d.signal(signal.SIGCONT)
    m = host.recv()
    check(m["type"] == "status" and m["seq"] == 2 and m["mode"] == "host",
          "the waiting hint renewed the lease, no fallback in between: %s" % m)
    host.no_message(0.3)


@case(args=["--interval-ms", "100"])
def reconnect(tree, host, d):
    """The socket closes and opens again: the guest says hello, the lease survives, and the
    watermark starts again with the host's session."""
    host.expect(type="status")
    host.send(hello(A))
    host.expect(type="hello")
    hint2(host, A, 7, "0-1")
    host.expect(type="status", seq=7)
    host.close(listener_too=True)  # the host agent goes away, socket file included
    time.sleep(0.3)                # let the daemon fail a few reconnects (that is the test)
    host.listen()
    host.accept(timeout=10)
    m = host.recv()
    check(m["type"] == "hello" and m.get("max_v") == 2, "hello again after reconnect: %s" % m)
    s = host.expect(type="status")
    check(s["seq"] == 0 and s["mode"] == "host" and s["applied"] == "0-1",
          "the lease survives a reconnect, seq watermark reset: %s" % s)
    # A host arrival forgets the session: a hint before the new host's hello names a session
    # the guest does not hold.
    hint2(host, B, 1, "0-2")
    e = host.expect(type="error")
    check(e["code"] == "unknown-session" and e["seq"] == 1, "hint before hello refused: %s" % e)
    host.send(hello(B))
    host.expect(type="hello")
    hint2(host, B, 1, "0-2")
    host.expect(type="status", seq=1, applied="0-2")


@case(args=["--interval-ms", "100"])
def session_restart_same_connection(tree, host, d):
    """A host restarted so fast that the guest never saw the connection drop (a virtio port
    shows the host's close only to a guest reading while it is away): its hello, with a new
    session on the same byte stream, resets the watermark and its first hint applies at once."""
    host.expect(type="status")
    host.send(hello(A))
    h = host.expect(type="hello")
    check(h.get("max_v") == 2, "the guest speaks version 2: %s" % h)
    host.expect(type="status")
    for seq in range(100, 105):
        hint2(host, A, seq, "0-1")
        s = host.expect(type="status", seq=seq)
        check(s["v"] == 2, "status written in version 2 after both hellos: %s" % s)
    # The same session again: nothing to answer (hellos cannot ping-pong).
    host.send(hello(A))
    hint2(host, A, 105, "0")
    m = host.recv()
    check(m["type"] == "status" and m["seq"] == 105, "same-session hello not answered: %s" % m)
    t0 = time.monotonic()
    host.send(hello(B))
    h = host.expect(type="hello")
    s = host.expect(type="status")
    check(s["seq"] == 0, "new session: watermark 0 in the status answering its hello: %s" % s)
    hint2(host, B, 1, "0-2")
    s = host.expect(type="status", seq=1)
    took = time.monotonic() - t0
    check(s["applied"] == "0-2" and tree.preferred() == "0-2\n",
          "the new session's seq 1 applied at once (%.0f ms): %s" % (took * 1000, s))
    # The old session's hints are refused by name, not as stale-seq, and change nothing.
    hint2(host, A, 106, "0")
    e = host.expect(type="error")
    check(e["code"] == "unknown-session" and e["seq"] == 106, "old session refused: %s" % e)
    check(tree.preferred() == "0-2\n", "old session's hint did not apply")
    # A version 2 hint must carry a session.
    host.send({"v": 2, "type": "hint", "seq": 2, "cpus": "0", "lease_ms": 1000})
    e = host.expect(type="error")
    check(e["code"] == "missing-field" and e["seq"] == 2, "v2 hint without session: %s" % e)


@case(args=["--interval-ms", "100"])
def session_v1_host(tree, host, d):
    """A version 1 host (no session, no max_v) keeps working: its hello resets the watermark,
    is answered once per arrival, and its version 1 hints apply."""
    host.expect(type="status")
    host.send(hello(max_v=1))
    host.expect(type="hello")
    s = host.expect(type="status")
    check(s["v"] == 1, "a version 1 host is written to in version 1: %s" % s)
    host.hint(7, "0-1")
    host.expect(type="status", seq=7, applied="0-1")
    host.send(hello(max_v=1))   # a restarted version 1 host on the same stream
    host.hint(1, "0-2")
    m = host.recv()
    check(m["type"] == "status" and m["seq"] == 1 and m["applied"] == "0-2",
          "sessionless hello: watermark reset, not answered twice: %s" % m)
    host.hint(1, "0")
    e = host.expect(type="error")
    check(e["code"] == "stale-seq", "seq still increasing within it: %s" % e)


@plain
def systemd_notify():
    """Type=notify without libsystemd: READY=1 once running, STOPPING=1 on SIGTERM."""
    tree = Tree()
    path = os.path.join(tree.root, "notify.sock")
    ns = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    ns.bind(path)
    d = Daemon(tree, ["--port", os.path.join(tree.root, "absent.sock")], env={"NOTIFY_SOCKET": path})
    try:
        r, _, _ = select.select([ns], [], [], 10 * SLOW)
        check(r and ns.recv(256) == b"READY=1", "READY=1 on $NOTIFY_SOCKET")
        d.signal(signal.SIGTERM)
        r, _, _ = select.select([ns], [], [], 10 * SLOW)
        check(r and ns.recv(256) == b"STOPPING=1", "STOPPING=1 on SIGTERM")
        check(d.wait() == 0, "exit 0")
    finally:
        d.stop()
        ns.close()
        tree.cleanup()


@plain
def watchdog():
    """WatchdogSec=: WATCHDOG=1 from the loop every half of $WATCHDOG_USEC, for this process
    only ($WATCHDOG_PID), never without $WATCHDOG_USEC."""
    tree = Tree()
    path = os.path.join(tree.root, "notify.sock")
    ns = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    ns.bind(path)

    def collect(env, seconds):
        d = Daemon(tree, ["--port", os.path.join(tree.root, "absent.sock")],
                   env=dict(env, NOTIFY_SOCKET=path), log_name="guestd-%d.log" % len(runs))
        got = []
        try:
            t0 = time.monotonic()
            while time.monotonic() - t0 < seconds * SLOW:
                r, _, _ = select.select([ns], [], [], 0.05)
                if r:
                    got.append((time.monotonic() - t0, ns.recv(256).decode()))
            d.signal(signal.SIGTERM)
            check(d.wait() == 0, "exit 0")
        finally:
            d.stop()
        while select.select([ns], [], [], 0.2)[0]:
            got.append((None, ns.recv(256).decode()))
        runs.append(got)
        return got
    runs = []
    try:
        got = collect({"WATCHDOG_USEC": "400000"}, 1.5)
        pings = [t for t, m in got if m == "WATCHDOG=1" and t is not None]
        check("READY=1" in [m for _, m in got], "READY=1 sent: %s" % got)
        check(len(pings) >= 5, "WATCHDOG=1 about every 200 ms for 1.5 s: %s" % got)
        if not WRAPPED:
            gaps = [b - a for a, b in zip(pings, pings[1:])]
            check(max(gaps) < 0.35, "no gap near the 400 ms period: %s" % gaps)
        # WATCHDOG_PID naming another process (a child that inherited the variables): none
        got = collect({"WATCHDOG_USEC": "400000", "WATCHDOG_PID": "1"}, 0.8)
        check("WATCHDOG=1" not in [m for _, m in got] and "READY=1" in [m for _, m in got],
              "no WATCHDOG=1 when WATCHDOG_PID names another process: %s" % got)
        got = collect({}, 0.8)
        check("WATCHDOG=1" not in [m for _, m in got], "no WATCHDOG=1 without WATCHDOG_USEC")
    finally:
        ns.close()
        tree.cleanup()


@case()
def sigterm_restores(tree, host, d):
    host.expect(type="status")
    host.hint(1, "0")
    host.expect(type="status", seq=1)
    check(tree.preferred() == "0\n", "hint applied")
    d.signal(signal.SIGTERM)
    check(d.wait() == 0, "exit status 0 after SIGTERM")
    check(tree.preferred() == "0-3\n", "full online set restored: %r" % tree.preferred())


@case(preferred=False)
def unsupported(tree, host, d):
    m = host.recv()
    check(m["type"] == "hello" and m["writable"] is False, "hello says not writable: %s" % m)
    s = host.expect(type="status")
    check(s["mode"] == "unsupported" and s["applied"] == "", "mode unsupported: %s" % s)
    host.hint(1, "0-1")
    e = host.expect(type="error")
    check(e["seq"] == 1 and e["code"] == "unsupported", "hint refused as unsupported: %s" % e)
    check(not os.path.exists(tree.preferred_path), "nothing written")
    d.signal(signal.SIGTERM)
    check(d.wait() == 0, "clean exit")
    check(not os.path.exists(tree.preferred_path), "nothing written at exit either")


@case(ncpus=8, smt=2, args=["--interval-ms", "100", "--high", "500", "--low", "200"])
def local_governor(tree, host, d):
    host.expect(type="status")
    stop = threading.Event()
    level = {"steal": 0}

    def feed():  # the "kernel": advance /proc/stat at the chosen steal fraction
        while not stop.is_set():
            tree.tick_stat(10, level["steal"])
            time.sleep(0.02)
    t = threading.Thread(target=feed, daemon=True)
    t.start()
    try:
        level["steal"] = 20  # 20 % steal: above high (5 %)
        seen = []
        for want in ["0-5", "0-3", "0-1"]:
            s = host.expect(type="status", applied=want, timeout=5)
            check(s["mode"] == "fallback" and s["steal_pct_x100"] > 500, "shrink step: %s" % s)
            seen.append(s["applied"])
        # Never below the housekeeping core: no further status with a smaller set.
        deadline = time.monotonic() + 0.5 * SLOW
        while time.monotonic() < deadline:
            try:
                s = host.recv(0.1)
            except Fail:
                continue
            check(s.get("applied") == "0-1", "housekeeping core kept: %s" % s)
        check(tree.preferred() == "0-1\n", "file holds the housekeeping core")
        level["steal"] = 0   # contention gone: one core back per interval, lowest first
        for want in ["0-3", "0-5", "0-7"]:
            s = host.expect(type="status", applied=want, timeout=5)
            check(s["steal_pct_x100"] <= 200, "grow step at low steal: %s" % s)
    finally:
        stop.set()
        t.join()


@plain
def isolated_housekeeping():
    """With nohz_full=0-1 the housekeeping CPUs are 2-3: the hello says so, a set holding any
    of them is taken (not only the first), a set holding none is refused; "(null)" in isolated
    means none."""
    tree = Tree()
    Tree.write(os.path.join(tree.cpu, "isolated"), "(null)\n")
    Tree.write(os.path.join(tree.cpu, "nohz_full"), "0-1\n")
    host = Host(os.path.join(tree.root, "port.sock"))
    d = Daemon(tree, ["--port", host.path])
    try:
        host.accept()
        m = host.expect(type="hello")
        check(m.get("housekeeping") == "2-3", "hello: housekeeping 2-3: %s" % m)
        host.expect(type="status")
        host.hint(1, "1,3")
        host.expect(type="status", seq=1, applied="1,3")
        check(tree.preferred() == "1,3\n", "isolated CPUs may be left out, any housekeeping CPU kept")
        host.hint(2, "0-1")
        e = host.expect(type="error", seq=2)
        check(e["code"] == "no-housekeeping" and "cpus 2-3" in e["message"], "housekeeping 2-3: %s" % e)
    finally:
        d.stop()
        host.close(listener_too=True)
        tree.cleanup()


@case(args=["--interval-ms", "100"])
def hotplug(tree, host, d):
    host.expect(type="status")
    host.hint(1, "0-3")
    host.expect(type="status", seq=1, applied="0-3")
    tree.set_online("0-2")
    # the host clips its hints to the hello's online set: it must hear of the change
    s, h = host.expect_each({"type": "status", "applied": "0-2"}, {"type": "hello"}, timeout=3)
    check(s["mode"] == "host", "hint clipped to online CPUs: %s" % s)
    check(tree.preferred() == "0-2\n", "CPU 3 no longer written")
    check(h["online"] == "0-2" and h["housekeeping"] == "0-2", "hello after the unplug: %s" % h)
    host.hint(2, "0-3")
    e = host.expect(type="error", seq=2)
    check(e["code"] == "not-online", "offline CPU refused: %s" % e)
    host.hint(3, "0,2")
    host.expect(type="status", seq=3, applied="0,2")
    tree.set_online("0-3")
    h = host.expect(type="hello", timeout=3)
    check(h["online"] == "0-3", "hello after the plug: %s" % h)
    host.hint(4, "0-3")
    host.expect(type="status", seq=4, applied="0-3")
    # one hello per change, not one per tick
    host.hint(5, "0-1")
    host.expect(type="status", seq=5, applied="0-1")
    time.sleep(1.5)
    host.hint(6, "0-1")
    m = host.recv()
    check(m["type"] == "status" and m["seq"] == 6, "nothing but the status after 1.5 s: %s" % m)


def auto_tree():
    tree = Tree()
    dev = os.path.join(tree.root, "dev")
    os.makedirs(dev)
    for n, name in (("vport0p1", "org.qemu.guest_agent.0"), ("vport1p1", "org.corehint.0")):
        p = os.path.join(tree.sys, "class/virtio-ports", n)
        os.makedirs(p)
        Tree.write(os.path.join(p, "name"), name + "\n")
    return tree, dev


@plain
def port_auto():
    """--port auto finds vportNpM by name under sysfs when there is no udev symlink."""
    tree, dev = auto_tree()
    host = Host(os.path.join(dev, "vport1p1"))  # a socket where the char device would be
    d = Daemon(tree, ["--port", "auto", "--dev-root", dev])
    try:
        host.accept()
        m = host.recv()
        check(m["type"] == "hello", "auto-detected port got a hello: %s" % m)
    finally:
        d.stop()
        host.close(listener_too=True)
        tree.cleanup()


@plain
def once():
    tree = Tree()
    host = Host(os.path.join(tree.root, "port.sock"))
    d = Daemon(tree, ["--port", host.path, "--once"])
    try:
        host.accept()
        host.expect(type="status")
        host.hint(4, "0-1")
        host.expect(type="status", seq=4)
        check(d.wait() == 0, "--once exits 0 after applying")
        r = json.loads(d.proc.stdout.read())
        check(r["result"] == "applied" and r["seq"] == 4 and r["applied"] == "0-1", "%s" % r)
        check(tree.preferred() == "0-1\n", "--once leaves the hint applied")
    finally:
        d.stop()
        host.close(listener_too=True)
    # No host at all: one fallback step after one interval.
    d = Daemon(tree, ["--port", os.path.join(tree.root, "absent.sock"), "--once",
                      "--fallback", "none", "--interval-ms", "200"])
    try:
        check(d.wait() == 0, "--once without a host exits 0")
        r = json.loads(d.proc.stdout.read())
        check(r["result"] == "fallback" and r["applied"] == "0-3" and r["fallback"] == "none",
              "one fallback step: %s" % r)
    finally:
        d.stop()
        tree.cleanup()


@plain
def restore():
    tree = Tree()
    Tree.write(tree.preferred_path, "0\n")
    r = guestd("--restore", "--sysfs-root", tree.sys, "--proc-root", tree.proc)
    check(r.returncode == 0, "--restore exits 0: %s" % r.stderr)
    check(tree.preferred() == "0-3\n", "--restore writes the online set")
    # The file reads as every online CPU, but the kernel may keep a request behind it (hint
    # {1}, CPU 1 offlined: the mask fell back to all, and CPU 1's return narrows it again).
    # Only a write of every active CPU ends the request: --restore writes even then.  The
    # same set spelt differently shows whether it wrote.
    Tree.write(tree.preferred_path, "0,1,2,3\n")
    r = guestd("--restore", "--sysfs-root", tree.sys, "--proc-root", tree.proc)
    check(r.returncode == 0, "--restore exits 0: %s" % r.stderr)
    check(tree.preferred() == "0-3\n",
          "--restore writes the online set even when the file already holds it: %r"
          % tree.preferred())
    os.unlink(tree.preferred_path)
    r = guestd("--restore", "--sysfs-root", tree.sys, "--proc-root", tree.proc)
    check(r.returncode == 0, "--restore without a preferred file is not an error")
    tree.cleanup()


def strace_wrapper(tree, name, *strace_args):
    """A RUN_WRAPPED stand-in that runs the daemon under strace with strace_args (in place of
    the run's wrapper: valgrind would add calls of its own); under ptrace LeakSanitizer cannot
    run, so a sanitizer build leaves leaks to the other cases."""
    wrap = os.path.join(tree.root, name)
    with open(wrap, "w") as f:
        f.write("#!/bin/sh\nexport ASAN_OPTIONS=\"${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0\"\n"
                "exec strace -f -qq -o /dev/null %s \"$@\"\n" % " ".join(strace_args))
    os.chmod(wrap, 0o755)
    return wrap


@plain
def restore_busy():
    """The in-kernel steal_governor someone else loaded owns the mask: the kernel answers the
    write with EBUSY (strace injects it into every write to the preferred file).  --restore
    exits 0 and says why (the governor's claim ended any request; its unload makes every CPU
    preferred again), where it used to exit 1 and fail the unit's ExecStopPost=; and so does
    a daemon stopped by SIGTERM.  Any other refusal is still an error."""
    tree = Tree()
    mod = os.path.join(tree.sys, "module/steal_governor")
    os.makedirs(mod)   # loaded by an operator: no note of ours under --state-dir
    Tree.write(tree.preferred_path, "0\n")

    def restore_under(wrap):
        cmd = [wrap, os.environ["GUESTD"], "--restore", "--sysfs-root", tree.sys,
               "--proc-root", tree.proc, "--state-dir", tree.state, "--modprobe", "/bin/false"]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60 * SLOW)
    try:
        ebusy = strace_wrapper(tree, "strace-ebusy", "-P", tree.preferred_path,
                               "-e", "trace=write", "-e", "inject=write:error=EBUSY")
        r = restore_under(ebusy)
        check(r.returncode == 0, "--restore exits 0 when the governor owns the mask: rc %d %s"
              % (r.returncode, r.stderr))
        check("is owned by steal_governor (EBUSY)" in r.stderr and
              "when it is unloaded" in r.stderr, "--restore says who owns the mask: %s" % r.stderr)
        check(os.path.isdir(mod), "the operator's module is left loaded")
        os.rmdir(mod)   # an owner the module check cannot see: the kernel's EBUSY decides
        r = restore_under(ebusy)
        check(r.returncode == 0, "--restore exits 0 on EBUSY: rc %d %s" % (r.returncode, r.stderr))
        check("is owned by an in-kernel policy (EBUSY)" in r.stderr, "EBUSY named: %s" % r.stderr)
        einval = strace_wrapper(tree, "strace-einval", "-P", tree.preferred_path,
                                "-e", "trace=write", "-e", "inject=write:error=EINVAL")
        r = restore_under(einval)
        check(r.returncode == 1 and "Invalid argument" in r.stderr,
              "another refusal is an error: rc %d %s" % (r.returncode, r.stderr))
        # The daemon's own restore at SIGTERM: the same answer, exit 0.
        saved = os.environ["RUN_WRAPPED"]
        os.environ["RUN_WRAPPED"] = strace_wrapper(
            tree, "strace-ebusy-daemon", "-P", tree.preferred_path, "-e", "trace=write",
            "-e", "inject=write:error=EBUSY:when=2+")
        host = Host(os.path.join(tree.root, "port.sock"))
        try:
            d = Daemon(tree, ["--port", host.path, "--fallback", "none"])
        finally:
            os.environ["RUN_WRAPPED"] = saved
        try:
            host.accept(timeout=15)
            host.expect(type="status", mode="fallback", applied="0-3", timeout=10)
            # SIGTERM to the daemon, strace's child; strace exits with its status
            with open("/proc/%d/task/%d/children" % (d.proc.pid, d.proc.pid)) as f:
                os.kill(int(f.read().split()[0]), signal.SIGTERM)
            check(d.wait() == 0, "a daemon stopped while the mask is owned elsewhere exits 0")
            check("(EBUSY)" in d.log_text(), "the stop says the mask is owned elsewhere")
        finally:
            d.stop()
            host.close(listener_too=True)
    finally:
        tree.cleanup()


def fake_modprobe(tree):
    log = os.path.join(tree.root, "modprobe.log")
    fake = os.path.join(tree.root, "modprobe")
    with open(fake, "w") as f:
        f.write("#!/bin/sh\necho \"$@\" >> %s\n"
                "if [ \"$1\" = -r ]; then rmdir %s/module/steal_governor\n"
                "else mkdir -p %s/module/steal_governor; fi\n" % (log, tree.sys, tree.sys))
    os.chmod(fake, 0o755)
    return fake, log


@plain
def kernel_fallback():
    tree = Tree()
    fake, log = fake_modprobe(tree)
    host = Host(os.path.join(tree.root, "port.sock"))
    d = Daemon(tree, ["--port", host.path, "--fallback", "kernel", "--modprobe", fake,
                      "--interval-ms", "300", "--high", "700", "--low", "100"])
    mod = os.path.join(tree.sys, "module/steal_governor")
    try:
        host.accept()
        host.expect(type="status", mode="fallback")
        wait_for(lambda: os.path.isdir(mod), 5, "steal_governor loaded at start (no lease)")
        with open(log) as f:
            check(f.read().split("\n")[0] ==
                  "steal_governor interval_ms=300 high_threshold=700 low_threshold=100",
                  "module loaded with our interval and thresholds")
        host.hint(1, "0-1", lease_ms=400)
        host.expect(type="status", seq=1, mode="host")
        check(not os.path.isdir(mod), "module unloaded before the hint was written")
        host.expect(type="status", mode="fallback", timeout=3)
        wait_for(lambda: os.path.isdir(mod), 5, "steal_governor loaded on lease expiry")
        # What the module does to the file is reported.
        Tree.write(tree.preferred_path, "0-2\n")
        host.expect(type="status", mode="fallback", applied="0-2", timeout=3)
        d.signal(signal.SIGTERM)
        check(d.wait() == 0, "clean exit")
        check(not os.path.isdir(mod), "module unloaded at exit")
        check(tree.preferred() == "0-3\n", "full set restored at exit")
    finally:
        d.stop()
        host.close(listener_too=True)
        tree.cleanup()


def unloads(log):
    if not os.path.exists(log):
        return 0
    with open(log) as f:
        return sum(1 for line in f if line.startswith("-r"))


@plain
def modprobe_off_the_loop():
    """modprobe runs beside the loop: a slow load does not hold up the channel, a hint that
    comes meanwhile waits for the unload, and a modprobe that hangs is killed."""
    tree = Tree()
    log = os.path.join(tree.root, "modprobe.log")
    fake = os.path.join(tree.root, "modprobe")
    with open(fake, "w") as f:
        f.write("#!/bin/sh\necho \"$@\" >> %s\n"
                "if [ \"$1\" = -r ]; then sleep 1; rmdir %s/module/steal_governor\n"
                "elif [ -e %s/hang ]; then exec sleep 1000\n"
                "else sleep 2; mkdir -p %s/module/steal_governor; fi\n"
                % (log, tree.sys, tree.root, tree.sys))
    os.chmod(fake, 0o755)
    mod = os.path.join(tree.sys, "module/steal_governor")
    host = Host(os.path.join(tree.root, "port.sock"))
    d = Daemon(tree, ["--port", host.path, "--fallback", "kernel", "--modprobe", fake,
                      "--interval-ms", "200"])
    try:
        host.accept()
        host.expect(type="status")
        wait_for(lambda: os.path.exists(log), 5, "modprobe started (no lease: fallback)")
        host.send(hello(A))
        host.expect(type="hello")
        check(not os.path.isdir(mod), "hello answered while modprobe was still loading")
        hint2(host, A, 1, "0-1")
        s = host.expect(type="status", seq=1, timeout=10)
        with open(log) as f:
            calls = [l.split()[0] for l in f]
        check(s["applied"] == "0-1" and not os.path.isdir(mod) and calls == ["steal_governor", "-r"],
              "the hint waited for load, then unload: %s %s" % (s, calls))
    finally:
        d.stop()
        host.close(listener_too=True)
    open(os.path.join(tree.root, "hang"), "w").close()
    host = Host(os.path.join(tree.root, "port.sock"))
    d = Daemon(tree, ["--port", host.path, "--fallback", "kernel", "--modprobe", fake,
                      "--interval-ms", "200"], log_name="guestd2.log")
    try:
        host.accept()
        host.send(hello(B))
        host.expect(type="hello")
        hint2(host, B, 1, "0-2")   # waits for the hanging load
        s = host.expect(type="status", seq=1, timeout=20)
        check(s["applied"] == "0-2", "applied once the hanging modprobe was killed: %s" % s)
        check("took more than 10000 ms: killed" in d.log_text(), "the kill is logged")
        check("using the local governor instead" in d.log_text(), "fallback degraded to local")
    finally:
        d.stop()
        host.close(listener_too=True)
    tree.cleanup()


def held_modprobe(tree):
    """A fake modprobe whose next unload, once <root>/hold exists, waits in the middle: it
    creates <root>/unloading and goes on when the test creates <root>/go (then it consumes
    both).  With <root>/operator it loads the module again right after its unload, as an
    operator's modprobe would."""
    log = os.path.join(tree.root, "modprobe.log")
    fake = os.path.join(tree.root, "modprobe")
    r, s = tree.root, tree.sys
    with open(fake, "w") as f:
        f.write("#!/bin/sh\necho \"$@\" >> %s\n"
                "if [ \"$1\" = -r ]; then\n"
                "  if [ -e %s/hold ]; then\n"
                "    touch %s/unloading\n"
                "    while [ ! -e %s/go ]; do sleep 0.01; done\n"
                "    rm -f %s/hold %s/go %s/unloading\n"
                "  fi\n"
                "  rmdir %s/module/steal_governor\n"
                "  if [ -e %s/operator ]; then mkdir %s/module/steal_governor; fi\n"
                "else mkdir -p %s/module/steal_governor; fi\n"
                % (log, r, r, r, r, r, r, s, r, s, s))
    os.chmod(fake, 0o755)
    return fake, log


def unload_refusal(hint_cpus, during, code, after=None):
    """Fallback kernel, no lease: steal_governor is loaded.  A hint of session A passes the
    checks and waits for the module's unload; during the unload `during` changes the world so
    that the hint, applied when the unload ends, is refused with `code`.  The guest must be back
    in a working fallback (the module loaded again; the status still says fallback and is
    true), not left with no governor and no lease until a hint succeeds."""
    tree = Tree()
    fake, log = held_modprobe(tree)
    mod = os.path.join(tree.sys, "module/steal_governor")
    Tree.write(os.path.join(tree.root, "none.conf"), "fallback = kernel\n")  # reloads may change it
    host = Host(os.path.join(tree.root, "port.sock"))
    d = Daemon(tree, ["--port", host.path, "--modprobe", fake, "--interval-ms", "200"])
    extra = {}
    try:
        host.accept()
        host.expect(type="status", mode="fallback")
        wait_for(lambda: os.path.isdir(mod), 20, "steal_governor loaded at start (no lease)")
        host.send(hello(A))
        host.expect(type="hello")
        open(os.path.join(tree.root, "hold"), "w").close()
        hint2(host, A, 1, hint_cpus)
        wait_for(lambda: os.path.exists(os.path.join(tree.root, "unloading")), 20,
                 "the hint to wait for modprobe -r")
        during(tree, host, extra)
        open(os.path.join(tree.root, "go"), "w").close()
        e = host.expect(type="error", seq=1, timeout=20)
        check(e["code"] == code, "the waiting hint refused as %s: %s" % (code, e))
        check(tree.preferred() != hint_cpus + "\n", "the refused set not written")
        if code != "busy":   # (an operator's module is left alone: nothing to load)
            wait_for(lambda: os.path.isdir(mod), 20,
                     "the fallback entered again after the refusal: steal_governor loaded again")
            with open(log) as f:
                calls = [l.split()[0] for l in f]
            check(calls == ["steal_governor", "-r", "steal_governor"],
                  "load, unload for the hint, load again: %s" % calls)
        if after:
            after(tree, host, d, extra, mod, log)
    finally:
        d.stop()
        host.close(listener_too=True)
        if "sleeper" in extra:
            extra["sleeper"].kill()
            extra["sleeper"].wait()
        tree.cleanup()


@plain
def unload_then_unknown_session():
    """The host restarts (hello with a new session) while the module is being unloaded for its
    last hint: that hint is refused as unknown-session, the fallback runs again, and the new
    session's first hint applies."""
    def during(tree, host, extra):
        host.send(hello(B))
        host.expect(type="hello")   # answered: the new session is current

    def after(tree, host, d, extra, mod, log):
        open(os.path.join(tree.root, "hold"), "w").close()
        hint2(host, B, 1, "0-2")
        wait_for(lambda: os.path.exists(os.path.join(tree.root, "unloading")), 20,
                 "the new session's hint to wait for modprobe -r")
        open(os.path.join(tree.root, "go"), "w").close()
        s = host.expect(type="status", seq=1, mode="host", timeout=5)
        check(s["applied"] == "0-2" and not os.path.isdir(mod),
              "the new session's hint applied after the unload: %s" % s)
    unload_refusal("0-1", during, "unknown-session", after)


@plain
def unload_then_cpu_gone():
    """A CPU of the waiting hint goes offline during the unload: refused as not-online, the
    fallback runs again, and it is a fallback a reload can switch (the reload needs one)."""
    def during(tree, host, extra):
        tree.set_online("0-2")

    def after(tree, host, d, extra, mod, log):
        Tree.write(os.path.join(tree.root, "none.conf"), "fallback = local\n")
        d.signal(signal.SIGHUP)
        wait_for(lambda: "fallback kernel -> local (configuration reloaded)" in d.log_text(), 20,
                 "the reload to switch the running fallback")
        wait_for(lambda: not os.path.isdir(mod), 20, "steal_governor unloaded by the reload")
    unload_refusal("2-3", during, "not-online", after)


@plain
def unload_then_einval():
    """The kernel file answers the waiting hint's write with EINVAL (a stand-in: a symlink to
    a proc file that takes one integer and refuses "0-1" with EINVAL): refused as
    write-failed, the fallback runs again."""
    def during(tree, host, extra):
        extra["sleeper"] = subprocess.Popen(["sleep", "120"])
        target = "/proc/%d/oom_score_adj" % extra["sleeper"].pid
        os.unlink(tree.preferred_path)
        os.symlink(target, tree.preferred_path)

    def after(tree, host, d, extra, mod, log):
        check("Invalid argument" in d.log_text(), "the EINVAL is logged")
    unload_refusal("0-1", during, "write-failed", after)


@plain
def unload_then_busy():
    """An operator loads steal_governor right after our unload, before the waiting hint is
    written: the hint is refused as busy (the kernel would answer EBUSY), the hello says so,
    and the fallback runs again, leaving the operator's module alone."""
    def during(tree, host, extra):
        open(os.path.join(tree.root, "operator"), "w").close()

    def after(tree, host, d, extra, mod, log):
        check(tree.preferred() == "0-3\n", "nothing written over the operator's module")
        wait_for(lambda: "already loaded by someone else" in d.log_text(), 20,
                 "the fallback entered again, the operator's module left alone")
        check(os.path.isdir(mod), "the operator's module stays loaded")
        check("host hints cannot be applied: busy" in d.log_text(), "busy is logged")
        with open(log) as f:
            calls = [l.split()[0] for l in f]
        check(calls == ["steal_governor", "-r"], "no load over the operator's module: %s" % calls)
    unload_refusal("0-1", during, "busy", after)


@case(args=["--interval-ms", "100"])
def local_anchor_after_hint(tree, host, d):
    """The local governor anchors where v11 does, on the first housekeeping CPU of the set in
    force: after hint 2-3 (4 CPUs, all housekeeping) and its lease's expiry, steal inside the
    hold band (3.5 %, between 2 % and 5 %) changes nothing; CPU 0 is not put back."""
    host.expect(type="status")
    stop = threading.Event()
    level = {"steal": [3, 4]}   # 3.5 % over every pair of ticks

    def feed():
        while not stop.is_set():
            for s in level["steal"]:
                tree.tick_stat(10, s)
            time.sleep(0.02)
    t = threading.Thread(target=feed, daemon=True)
    t.start()
    try:
        host.hint(1, "2-3", lease_ms=300)
        host.expect(type="status", seq=1, mode="host", applied="2-3")
        s = host.expect(type="status", mode="fallback", timeout=3)
        check(s["applied"] == "2-3", "the fallback starts from the hint's set: %s" % s)
        deadline = time.monotonic() + 1.0 * SLOW   # ten local intervals
        while time.monotonic() < deadline:
            try:
                s = host.recv(0.1)
            except Fail:
                continue
            check(s.get("applied", "2-3") == "2-3", "held at 3.5 %% steal: %s" % s)
        check(tree.preferred() == "2-3\n", "the file still holds 2-3: %r" % tree.preferred())
        level["steal"] = [20, 20]   # above high: CPU 3 goes, 2 (the anchor) stays
        s = host.expect(type="status", mode="fallback", applied="2", timeout=3)
        level["steal"] = [0, 0]     # at or below low: the lowest missing CPU first
        for want in ["0,2", "0-2", "0-3"]:
            host.expect(type="status", mode="fallback", applied=want, timeout=3)
    finally:
        stop.set()
        t.join()


@plain
def module_ownership():
    """guestd unloads steal_governor only when a guestd loaded it: not when an operator did
    (then hints are refused as busy and the hello says why), and yes after a crash (the note
    under --state-dir survives the process; --restore and the next guestd honour it)."""
    tree = Tree()
    fake, log = fake_modprobe(tree)
    mod = os.path.join(tree.sys, "module/steal_governor")
    os.makedirs(mod)   # loaded by the operator
    host = Host(os.path.join(tree.root, "port.sock"))
    d = Daemon(tree, ["--port", host.path, "--fallback", "kernel", "--modprobe", fake,
                      "--interval-ms", "200"])
    try:
        host.accept()
        h = host.expect(type="hello")
        check(h["writable"] is False and h.get("reason", "").startswith("busy"),
              "hello: not writable, busy: %s" % h)
        host.hint(1, "0-1")
        e = host.expect(type="error", seq=1)
        check(e["code"] == "busy", "hint refused as busy, not write-failed: %s" % e)
        check(os.path.isdir(mod), "the operator's module stays loaded")
        # The operator unloads it: within a tick the guest says hints can be applied.
        os.rmdir(mod)
        h = host.expect(type="hello", timeout=3)
        check(h["writable"] is True and "reason" not in h, "writable again: %s" % h)
        host.hint(2, "0-1")
        host.expect(type="status", seq=2, applied="0-1")
        os.makedirs(mod)   # and loads it again
        host.expect(type="hello", writable=False, timeout=3)
        d.signal(signal.SIGTERM)
        check(d.wait() == 0, "clean exit")
        r = guestd("--restore", "--sysfs-root", tree.sys, "--proc-root", tree.proc,
                   "--state-dir", tree.state, "--modprobe", fake)
        check(r.returncode == 0, "--restore exits 0: %s" % r.stderr)
        check(os.path.isdir(mod) and unloads(log) == 0,
              "neither guestd nor --restore unloaded the operator's module")
        check(d.log_text().count("cannot write the preferred set") <= 1,
              "a tick-time write error is logged once per reason")
    finally:
        d.stop()
        host.close(listener_too=True)
    os.rmdir(mod)
    # guestd loads it, then dies by SIGKILL: the module is still loaded, and ours.
    host = Host(os.path.join(tree.root, "port.sock"))
    d = Daemon(tree, ["--port", host.path, "--fallback", "kernel", "--modprobe", fake,
                      "--interval-ms", "200"], log_name="guestd2.log")
    try:
        host.accept()
        wait_for(lambda: os.path.isdir(mod), 5, "guestd loaded steal_governor (no lease yet)")
        marker = os.path.join(tree.state, "steal_governor.loaded")
        check(os.path.exists(marker), "the load is noted in the state dir")
        d.signal(signal.SIGKILL)
        d.wait()
    finally:
        d.stop()
        host.close(listener_too=True)
    # The next guestd takes it over and unloads it before applying a hint.
    host = Host(os.path.join(tree.root, "port.sock"))
    d = Daemon(tree, ["--port", host.path, "--fallback", "kernel", "--modprobe", fake,
                      "--interval-ms", "200"], log_name="guestd3.log")
    try:
        host.accept()
        h = host.expect(type="hello")
        check(h["writable"] is True, "an earlier guestd's module does not make us busy: %s" % h)
        host.hint(1, "0-2")
        host.expect(type="status", seq=1, applied="0-2")
        check(not os.path.isdir(mod) and unloads(log) == 1, "unloaded before the hint applied")
        host.expect(type="status", mode="fallback", timeout=10)  # lease 5 s: loaded again
        wait_for(lambda: os.path.isdir(mod), 5, "loaded again on lease expiry")
        d.signal(signal.SIGKILL)
        d.wait()
    finally:
        d.stop()
        host.close(listener_too=True)
    # ExecStopPost after the crash: --restore unloads what a guestd loaded.
    r = guestd("--restore", "--sysfs-root", tree.sys, "--proc-root", tree.proc,
               "--state-dir", tree.state, "--modprobe", fake)
    check(r.returncode == 0, "--restore exits 0: %s" % r.stderr)
    check(not os.path.isdir(mod) and unloads(log) == 2, "--restore unloaded guestd's module")
    check(not os.path.exists(os.path.join(tree.state, "steal_governor.loaded")), "note removed")
    tree.cleanup()


@plain
def cli():
    r = guestd("--help")
    check(r.returncode == 0 and "--port PATH|auto" in r.stdout and "--once" in r.stdout,
          "--help documents the options")
    r = guestd("--version")
    check(r.returncode == 0 and r.stdout.startswith("corehint-guestd "), "--version")
    tree = Tree()
    open(os.path.join(tree.root, "none.conf"), "w").close()
    conf = os.path.join(tree.root, "g.conf")
    with open(conf, "w") as f:
        f.write("# test\nport = /tmp/x.sock\nfallback = none\ninterval_ms = 250\n"
                "high_threshold = 900\nlow_threshold = 100\nlog_level = debug\n")
    r = guestd("--config", conf, "--dump-config", "--interval-ms", "300")
    check(r.returncode == 0, "--dump-config exits 0: %s" % r.stderr)
    for want in ["port = /tmp/x.sock", "fallback = none", "interval_ms = 300",
                 "high_threshold = 900", "low_threshold = 100", "log_level = debug"]:
        check(want + "\n" in r.stdout, "dump shows %r (command line beats file)" % want)
    r = guestd("--config", os.path.join(tree.root, "missing.conf"), "--dump-config")
    check(r.returncode == 2 and "missing.conf" in r.stderr, "an explicit missing file is an error")
    bad = [
        ("interval_ms = 50\n", "g.conf:1: interval_ms: 50 is out of range 100..100000"),
        ("\nfallback = maybe\n", "g.conf:2: fallback: \"maybe\" is not one of local, kernel, none"),
        ("a\n", "g.conf:1: expected \"key = value\""),
        ("colour = blue\n", "g.conf:1: unknown key \"colour\""),
        ("[x]\nport = a\n", "g.conf:2: unknown section [x]"),
        ("high_threshold = 100\nlow_threshold = 100\n", "low threshold 100 must be below"),
    ]
    for text, msg in bad:
        with open(conf, "w") as f:
            f.write(text)
        r = guestd("--config", conf, "--dump-config")
        check(r.returncode == 2 and msg in r.stderr, "%r -> %r, got %r" % (text, msg, r.stderr))
    for args, msg in [(["--interval-ms", "100001"], "--interval-ms: 100001 is out of range"),
                      (["--high", "x"], "--high: \"x\" is not an unsigned integer"),
                      (["--low", "600"], "low threshold 600 must be below high threshold 500"),
                      (["--fallback", "kernl"], "--fallback: \"kernl\" is not one of"),
                      (["--log", "file"], "--log: \"file\" is not one of syslog, stderr"),
                      (["--bogus"], "--bogus: unknown option"),
                      (["--port"], "unknown option or missing argument"),
                      (["extra"], "extra: unexpected argument")]:
        r = guestd("--config", os.path.join(tree.root, "none.conf"), *args)
        check(r.returncode == 2 and msg in r.stderr, "%s -> %r, got %r" % (args, msg, r.stderr))
    tree.cleanup()


@case(args=["--interval-ms", "200"])
def sighup_reload(tree, host, d):
    conf = os.path.join(tree.root, "none.conf")
    host.expect(type="status")
    with open(conf, "w") as f:
        f.write("interval_ms = nope\n")
    d.signal(signal.SIGHUP)
    wait_for(lambda: "keeping the configuration in force" in d.log_text(), 5, "reload refused")
    check("none.conf:1: interval_ms" in d.log_text(), "reload error names file and line")
    with open(conf, "w") as f:
        f.write("fallback = none\n")
    d.signal(signal.SIGHUP)
    wait_for(lambda: "reloaded" in d.log_text(), 5, "reload accepted")
    host.hint(1, "0", lease_ms=200)
    host.expect(type="status", seq=1)
    s = host.expect(type="status", mode="fallback", timeout=3)
    check(s["applied"] == "0-3", "reloaded fallback none in force: %s" % s)


@plain
def reload_switches_fallback():
    """A guest in its fallback takes a reloaded fallback at once: none -> kernel loads the
    module, kernel -> local unloads it, local -> none restores every online CPU; a guest that
    never hears from a host (or whose host left) would otherwise keep the old one forever."""
    tree = Tree()
    fake, log = fake_modprobe(tree)
    conf = os.path.join(tree.root, "none.conf")
    host = Host(os.path.join(tree.root, "port.sock"))
    mod = os.path.join(tree.sys, "module/steal_governor")
    Tree.write(conf, "fallback = none\n")
    d = Daemon(tree, ["--port", host.path, "--modprobe", fake, "--interval-ms", "200"])
    try:
        host.accept()
        host.expect(type="status", mode="fallback", applied="0-3")
        Tree.write(conf, "fallback = kernel\n")
        d.signal(signal.SIGHUP)
        wait_for(lambda: os.path.isdir(mod), 5, "steal_governor loaded by the reload")
        check("fallback none -> kernel (configuration reloaded)" in d.log_text(), "the switch is logged")
        # what the module writes is reported
        Tree.write(tree.preferred_path, "0-1\n")
        host.expect(type="status", mode="fallback", applied="0-1", timeout=3)
        Tree.write(conf, "fallback = local\n")
        d.signal(signal.SIGHUP)
        wait_for(lambda: not os.path.isdir(mod), 5, "steal_governor unloaded by the reload")
        Tree.write(conf, "fallback = none\n")
        d.signal(signal.SIGHUP)
        host.expect(type="status", mode="fallback", applied="0-3", timeout=3)
        check(tree.preferred() == "0-3\n", "fallback none wrote every online CPU: %r" % tree.preferred())
        # a reload that keeps the fallback changes nothing
        n = d.log_text().count("(configuration reloaded)")
        d.signal(signal.SIGHUP)
        wait_for(lambda: d.log_text().count("reloaded ") >= 4, 5, "fourth reload")
        check(d.log_text().count("(configuration reloaded)") == n, "same fallback: no switch")
    finally:
        d.stop()
        host.close(listener_too=True)
        tree.cleanup()


SANITIZED = os.environ.get("GUESTD_SANITIZED") == "1"


@case(args=["--log-level", "info"])
def host_not_reading(tree, host, d):
    """A host that stops reading: output is bounded, whole messages are dropped, hints still
    apply, and the channel works again once the host reads."""
    host.expect(type="status")
    n = 20000
    blob = "".join('{"v":1,"type":"hint","seq":%d,"cpus":"%s","lease_ms":60000}\n'
                   % (i, "0-1" if i % 2 else "0-2") for i in range(1, n + 1))
    host.send_raw(blob.encode())
    wait_for(lambda: "output buffer full" in d.log_text(), 30, "the daemon to drop output")
    wait_for(lambda: tree.preferred() == "0-2\n" and d.rss_kib() > 0, 30, "the last hint applied")
    rss = d.rss_kib()
    # Drain: every line is a whole message, in order, fewer than were answered.
    data = b""
    while True:  # until the daemon has flushed what it kept (quiet for 0.3 s)
        r, _, _ = select.select([host.conn], [], [], 0.3 * SLOW)
        if not r:
            break
        chunk = host.conn.recv(1 << 20)
        check(chunk, "the connection stays open")
        data += chunk
    check(data.endswith(b"\n"), "only whole lines were queued")
    lines = data.split(b"\n")[:-1]
    seqs = [json.loads(ln)["seq"] for ln in lines]
    check(0 < len(seqs) < n, "some statuses dropped: %d of %d kept" % (len(seqs), n))
    check(seqs == sorted(seqs), "kept statuses in order")
    print("host_not_reading: %d of %d statuses kept (%d bytes), RSS %d KiB"
          % (len(seqs), n, len(data), rss))
    if not WRAPPED and not SANITIZED:
        check(rss < 20 * 1024, "RSS bounded: %d KiB" % rss)
    host.hint(n + 1, "0")
    host.expect(type="status", seq=n + 1, applied="0")




# ASan keeps freed blocks in a 256 MiB quarantine by default, which looks like growth; a small
# quarantine keeps the bounded-memory check meaningful under the sanitizer too.
@case(args=["--interval-ms", "1000", "--log-level", "info"],
      env={"ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "") + ":quarantine_size_mb=4"}
      if SANITIZED else None)
def flood(tree, host, d):
    """10 000 hints/s for 10 s (3 s under valgrind): bounded memory, the last one applied."""
    host.expect(type="status")
    duration = 3 if WRAPPED else 10
    rate = 10000
    statuses = {"n": 0, "last": 0}
    stop = threading.Event()

    def reader():
        buf = b""
        while not stop.is_set():
            r, _, _ = select.select([host.conn], [], [], 0.2)
            if not r:
                continue
            data = host.conn.recv(1 << 16)
            if not data:
                return
            buf += data
            # Cheap on purpose: a json.loads per line would make Python the bottleneck.
            statuses["n"] += data.count(b'"type":"status"')
            end = buf.rfind(b"\n")
            if end < 0:
                continue
            start = buf.rfind(b"\n", 0, end) + 1
            m = json.loads(buf[start:end])
            buf = buf[end + 1:]
            if m["type"] == "status":
                statuses["last"] = m["seq"]
    t = threading.Thread(target=reader, daemon=True)
    t.start()
    sets = ["0-1", "0-2", "0-3", "0"]
    seq = 0
    rss = []
    t0 = time.monotonic()
    next_rss = t0
    batch = 100
    while time.monotonic() - t0 < duration:
        chunk = []
        for _ in range(batch):
            seq += 1
            chunk.append('{"v":1,"type":"hint","seq":%d,"cpus":"%s","lease_ms":60000}\n'
                         % (seq, sets[seq % 4]))
        host.conn.sendall("".join(chunk).encode())
        # pace to `rate`: the next batch is due at seq / rate seconds
        ahead = seq / rate - (time.monotonic() - t0)
        if ahead > 0:
            time.sleep(ahead)
        if time.monotonic() >= next_rss:
            rss.append(d.rss_kib())
            next_rss += 1.0
    elapsed = time.monotonic() - t0
    last = seq
    wait_for(lambda: statuses["last"] == last, 60, "the status of the last hint")
    stop.set()
    t.join()
    check(tree.preferred() == sets[last % 4] + "\n", "last hint applied: %r" % tree.preferred())
    print("flood: %d hints in %.1f s (%.0f/s), %d statuses, RSS KiB samples %s"
          % (last, elapsed, last / elapsed, statuses["n"], rss))
    # The rate reached is printed, not judged: on a shared 2-core machine it says more about
    # the neighbours than about guestd (a kernel build beside it halved it).  What is judged:
    # a real flood was offered, every hint was read, the last one applied, memory bounded.
    check(last >= 1000 * duration, "a flood was offered: %d hints in %.1f s" % (last, elapsed))
    if not WRAPPED and not SANITIZED:
        check(max(rss) < 20 * 1024, "RSS stays under 20 MiB: %s" % rss)
    # Under valgrind RSS is valgrind's (freed-block queue, translation cache); its leak check
    # is the memory verdict there.
    # The baseline is the sample after one second of flood: warm-up (allocator arenas, ASan's
    # quarantine filling) is not growth.
    if not WRAPPED:
        check(len(rss) >= 3 and max(rss[1:]) - rss[1] < 4 * 1024, "RSS does not grow: %s KiB" % rss)


if __name__ == "__main__":
    sys.exit(run_cases(CASES, sys.argv))
