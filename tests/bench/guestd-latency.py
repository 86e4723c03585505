#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Hint -> sysfs latency of corehint-guestd, measured through its UNIX-socket port.

    GUESTD=build/guest-helper/corehint-guestd tests/bench/guestd-latency.py [N]

One hint in flight at a time, alternating sets so every hint is written.  For each hint:
  write  = send() -> the daemon's close() of the preferred file (inotify IN_CLOSE_WRITE), i.e.
           decode + validate + read/compare + write + the start of the read-back;
  status = send() -> its status line received (the whole round trip, read-back included).
The fake tree lives on tmpfs (/dev/shm), as sysfs is memory-backed too.  Prints p50/p90/p99/max
in microseconds and the daemon's RSS."""

import ctypes
import os
import select
import struct
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "component", "guest"))
os.environ.setdefault("RUN_WRAPPED", os.path.join(here, "..", "lib", "run-wrapped"))
from guestd import Daemon, Host, Tree  # noqa: E402

IN_CLOSE_WRITE = 0x8
IN_NONBLOCK = 0o4000


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))]


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    libc = ctypes.CDLL(None, use_errno=True)
    tree = Tree(4)
    host = Host(os.path.join(tree.root, "port.sock"))
    d = Daemon(tree, ["--port", host.path, "--log-level", "warning"])
    try:
        host.accept()
        host.expect(type="status")
        ino = libc.inotify_init1(IN_NONBLOCK)
        if ino < 0 or libc.inotify_add_watch(ino, tree.preferred_path.encode(), IN_CLOSE_WRITE) < 0:
            raise SystemExit("inotify: errno %d" % ctypes.get_errno())
        sets = ["0-3", "0-1"]  # seq 1 gets 0-1: the tree starts at 0-3
        write_us, status_us = [], []
        for seq in range(1, n + 1):
            line = ('{"v":1,"type":"hint","seq":%d,"cpus":"%s","lease_ms":60000}\n'
                    % (seq, sets[seq % 2])).encode()
            t0 = time.perf_counter_ns()
            host.conn.sendall(line)
            t_write = None
            while t_write is None:
                r, _, _ = select.select([ino], [], [], 5)
                if not r:
                    raise SystemExit("no write for hint %d" % seq)
                buf = os.read(ino, 4096)
                if struct.unpack_from("iIII", buf)[1] & IN_CLOSE_WRITE:
                    t_write = time.perf_counter_ns()
            m = host.expect(type="status", seq=seq)
            t_status = time.perf_counter_ns()
            if m["applied"] != sets[seq % 2]:
                raise SystemExit("hint %d applied %s" % (seq, m["applied"]))
            write_us.append((t_write - t0) / 1000)
            status_us.append((t_status - t0) / 1000)
        rss = d.rss_kib()
        for name, xs in (("hint->sysfs write", write_us), ("hint->status (round trip)", status_us)):
            print("%-26s n=%d  p50 %6.0f us  p90 %6.0f us  p99 %6.0f us  max %6.0f us"
                  % (name, len(xs), pct(xs, 50), pct(xs, 90), pct(xs, 99), max(xs)))
        print("daemon RSS after %d hints: %d KiB" % (n, rss))
    finally:
        d.stop()
        host.close(listener_too=True)
        tree.cleanup()


if __name__ == "__main__":
    main()
