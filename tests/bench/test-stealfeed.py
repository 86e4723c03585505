#!/usr/bin/python3
"""Test of tests/bench/stealfeed without a VM: a stand-in qemu (this test's child, with threads
named "CPU 0/TCG" .. "CPU 2/TCG" that wait on one host CPU behind each other and a thread of
another name) and a stand-in guest port (a unix socket this test listens on, as qemu's chardev
does).  Checks that the feed's lines carry one non-negative amount per vCPU in vCPU order, that
their sum matches the threads' run-queue wait, that answers are timed, that a guest that stops
reading costs dropped lines and not a stalled feeder, and that the stats file says all of it."""
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "lib"))
from checks import check, finish  # noqa: E402


# The stand-in qemu: three vCPU threads spinning on host CPU 0 (so each waits behind the others)
# and an I/O thread that sleeps; vCPU threads started in reverse order so that their tids do not
# follow their vCPU numbers.
QEMU = r"""
import ctypes, os, threading, time
libc = ctypes.CDLL(None, use_errno=True)
def named(name, fn):
    def run():
        libc.prctl(15, name.encode(), 0, 0, 0)  # PR_SET_NAME
        fn()
    t = threading.Thread(target=run, daemon=True)
    t.start()
def spin():
    # hashlib lets go of the GIL on large buffers: the threads compete for the CPU, not the GIL
    import hashlib
    buf = bytes(1 << 20)
    os.sched_setaffinity(0, {0})
    while True:
        hashlib.sha256(buf).digest()
for v in (2, 1, 0):
    named("CPU %d/TCG" % v, spin)
named("IO mon_iothread", lambda: time.sleep(3600))
print("ready", flush=True)
time.sleep(3600)
"""


def stop(*procs):
    for p in procs:
        if p:
            p.kill()
            p.wait()


def waits(pid):
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/comm") as f:
            comm = f.read().strip()
        if comm.startswith("CPU ") and comm.endswith("/TCG"):
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                out[int(comm.split()[1].split("/")[0])] = int(f.read().split()[1])
    return out


with tempfile.TemporaryDirectory() as d:
    qemu = subprocess.Popen([sys.executable, "-c", QEMU], stdout=subprocess.PIPE, text=True)
    feeder = None
    try:
        check(qemu.stdout.readline().strip() == "ready", "stand-in qemu started")
        path, stats = os.path.join(d, "g.steal.sock"), os.path.join(d, "stats.json")
        lsock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        lsock.bind(path)
        lsock.listen(1)
        w0 = waits(qemu.pid)
        check(sorted(w0) == [0, 1, 2], f"three vCPU threads found: {w0}")
        feeder = subprocess.Popen([sys.executable, os.path.join(here, "stealfeed"), "--interval-ms", "50",
                                   "--stats", stats, f"{path}:{qemu.pid}"])
        lsock.settimeout(5)
        conn, _ = lsock.accept()
        conn.settimeout(5)
        buf, lines, t_end = b"", [], time.monotonic() + 2.0
        while time.monotonic() < t_end:
            try:
                data = conn.recv(65536)
            except socket.timeout:
                break
            if not data:
                break
            buf += data
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                f = line.decode().split()
                lines.append(f)
                if f[0] == "S":
                    conn.sendall(f"A {f[1]}\n".encode())
        w1 = waits(qemu.pid)
        check(len(lines) >= 10, f"a line every 50 ms for 2 s: {len(lines)}")
        check(all(f[0] == "S" and len(f) == 5 and all(x.isdigit() for x in f[1:]) for f in lines),
              f"every line is S SEQ NS0 NS1 NS2: {lines[:3]}")
        seqs = [int(f[1]) for f in lines]
        check(seqs == list(range(1, len(seqs) + 1)), f"sequence numbers 1, 2, ...: {seqs[:5]}")
        fed = [sum(int(f[2 + v]) for f in lines) for v in range(3)]
        waited = [w1[v] - w0[v] for v in range(3)]
        check(all(x > 0 for x in fed), f"every vCPU thread waited and was fed its wait: {fed}")
        # what was fed up to the last line is at most what the threads waited until now, and
        # not much less (one interval and a start-up lag of the threads' wait)
        check(all(fed[v] <= waited[v] and fed[v] >= waited[v] - 600e6 for v in range(3)),
              f"fed per vCPU matches its thread's run-queue wait: fed {fed}, waited {waited}")
        # Now stop reading: the socket buffer fills, the feeder drops lines but keeps its pace
        # and still answers SIGTERM at once.
        time.sleep(4)
        t0 = time.monotonic()
        feeder.send_signal(signal.SIGTERM)
        rc = feeder.wait(timeout=5)
        check(rc == 0 and time.monotonic() - t0 < 1.0, f"SIGTERM ends the feeder at once (rc {rc})")
        feeder = None
        s = json.load(open(stats))
        g = s["guests"][0]
        check(s["interval_ms"] == 50 and g["qemu_pid"] == qemu.pid, f"stats name the feed: {s}")
        check(g["lines_answered"] >= len(lines) - 2 and g["latency_ms_median"] is not None and
              0 <= g["latency_ms_median"] < 1000, f"answers counted and timed: {g}")
        check(g["lines_sent"] >= len(lines) and g["steal_fed_ns"] >= sum(fed),
              f"lines sent and steal fed counted: {g}, {len(lines)} lines read, {sum(fed)} ns")
        # 4 s unread at 20 lines/s: a socket buffer holds a few hundred KiB, so lines are only
        # dropped if the buffer filled; either way none is half-written
        rest = b""
        conn.setblocking(False)
        try:
            while True:
                data = conn.recv(1 << 20)
                if not data:
                    break
                rest += data
        except BlockingIOError:
            pass
        check(rest == b"" or rest.endswith(b"\n"), "no half-written line after the guest stopped reading")
        conn.close()
        lsock.close()
    finally:
        stop(feeder, qemu)

    # A guest whose port is not there yet (qemu not listening): the feeder waits and connects
    # when it appears, without a burst of the steal accumulated meanwhile.
    qemu = subprocess.Popen([sys.executable, "-c", QEMU], stdout=subprocess.PIPE, text=True)
    feeder = None
    try:
        qemu.stdout.readline()
        path = os.path.join(d, "late.sock")
        feeder = subprocess.Popen([sys.executable, os.path.join(here, "stealfeed"), "--interval-ms", "50",
                                   f"{path}:{qemu.pid}"])
        time.sleep(1.0)
        lsock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        lsock.bind(path)
        lsock.listen(1)
        lsock.settimeout(5)
        conn, _ = lsock.accept()
        conn.settimeout(5)
        first = b""
        while b"\n" not in first:
            first += conn.recv(4096)
        f = first.split(b"\n")[0].decode().split()
        total = sum(int(x) for x in f[2:])
        # three threads on one CPU wait about 2/3 of each 50 ms interval: ~100 ms per line, and
        # a second of backlog would be ~2 s
        check(total < 600e6, f"the first line after connecting holds one interval's steal, not the backlog: {f}")
        conn.close()
        lsock.close()
    finally:
        stop(feeder, qemu)

    # An idle guest (vCPU threads asleep): a line of zeros about once a second, answered.
    qemu = subprocess.Popen([sys.executable, "-c", QEMU.replace("named(\"CPU %d/TCG\" % v, spin)",
                                                                "named(\"CPU %d/TCG\" % v, lambda: time.sleep(3600))")],
                            stdout=subprocess.PIPE, text=True)
    feeder = None
    try:
        qemu.stdout.readline()
        path = os.path.join(d, "idle.sock")
        lsock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        lsock.bind(path)
        lsock.listen(1)
        feeder = subprocess.Popen([sys.executable, os.path.join(here, "stealfeed"), "--interval-ms", "50",
                                   f"{path}:{qemu.pid}"])
        lsock.settimeout(5)
        conn, _ = lsock.accept()
        conn.settimeout(5)
        buf, t_end = b"", time.monotonic() + 2.5
        while time.monotonic() < t_end:
            try:
                buf += conn.recv(4096)
            except socket.timeout:
                break
        lines = [line.split() for line in buf.decode().splitlines()]
        check(2 <= len(lines) <= 4 and all(f[2:] == ["0", "0", "0"] for f in lines),
              f"an idle guest gets a line of zeros about once a second: {lines}")
        conn.close()
        lsock.close()
    finally:
        stop(feeder, qemu)

    r = subprocess.run([sys.executable, os.path.join(here, "stealfeed"), "sock-without-pid"],
                       capture_output=True, text=True)
    check(r.returncode == 2 and "SOCKET:QEMU_PID" in r.stderr, f"a bad argument is an error: {r.stderr}")

finish()
