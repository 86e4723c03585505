#!/usr/bin/env python3
"""Per run of bench.log (the timestamped output of tests/bench/guests): the guests' times and,
on each host CPU, the milliseconds per second run by each guest's vCPU thread pinned there,
from threads.txt.gz (threads-monitor.py: every qemu thread's schedstat each second) and
tidmap.txt (which thread ids belong to which guest).  Then per mode: runs, runs with a
timeout, and the share of a host CPU its dominant vCPU thread took (median, max)."""
import collections
import gzip
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
tid_guest = {}
for line in open(os.path.join(HERE, "tidmap.txt")):
    p = line.split()
    if p[0].startswith("corehint"):
        for t in p[2:]:
            tid_guest[t] = p[0].split("-")[3]
runs = collections.OrderedDict()  # (workload, mode, rep) -> [end, longest s, times]
for line in open(os.path.join(HERE, "bench.log")):
    p = line.split()
    if len(p) == 6 and re.match(r"^[0-9a-z-]+:[a-z-]+$", p[1]) and \
            (p[5] == "timeout" or re.match(r"^[0-9.]+$", p[5])):
        r = runs.setdefault((p[1].split(":")[1], p[2], p[3]), [0.0, 0.0, []])
        r[0] = max(r[0], float(p[0]))
        r[1] = max(r[1], 60.0 if p[5] == "timeout" else float(p[5]))
        r[2].append(p[5])
samples, t = [], None
for line in gzip.open(os.path.join(HERE, "threads.txt.gz"), "rt"):
    if line.startswith("T "):
        t = float(line.split()[1])
    else:
        p = line.split()  # dom tid comm cpuN state run R wait W sw N
        if p[2].endswith("/TCG"):
            samples.append((t, tid_guest.get(p[1], "?"), p[2], float(p[6])))


def run_ms(t0, t1):
    acc, ts = collections.defaultdict(float), set()
    for t, g, comm, run in samples:
        if t0 <= t <= t1:
            ts.add(t)
            acc[(g, comm)] += run
    return {k: v / max(len(ts), 1) for k, v in acc.items()}


per_mode = collections.defaultdict(lambda: [0, 0, [], 0, 0])
print("%-13s %-11s %3s %-16s %s" % ("workload", "mode", "rep", "guest times s",
                                    "ms/s run on host CPU 0 and 1: guest 1's vCPU thread:guest 2's"))
for (wl, mode, rep), (end, secs, times) in runs.items():
    a = run_ms(end - secs + 1, end - 0.5)
    cells, m, lead = [], per_mode[mode], []
    for c in (0, 1):
        x, y = a.get(("1", "CPU_%d/TCG" % c), 0), a.get(("2", "CPU_%d/TCG" % c), 0)
        cells.append("CPU%d %4.0f:%-4.0f" % (c, x, y))
        if x + y > 200:  # a CPU both guests' threads used (not the idle vCPU 1 of oracle-1.1)
            m[2].append(max(x, y) / (x + y))
            lead.append(x > y)
    if len(lead) == 2:  # the guest ahead on CPU 0 behind on CPU 1: each VM holds one host CPU
        m[3] += 1
        m[4] += lead[0] != lead[1]
    m[0] += 1
    m[1] += "timeout" in times
    print("%-13s %-11s %3s %-16s %s" % (wl, mode, rep, "/".join(times), "  ".join(cells)))
print()
for mode, (n, timeouts, shares, both, apart) in per_mode.items():
    shares.sort()
    print("%-11s %2d runs, %d with a timeout; the dominant thread's share of a host CPU: median "
          "%.2f, max %.2f; a different guest ahead on each host CPU in %d of %d runs"
          % (mode, n, timeouts, shares[len(shares) // 2], shares[-1], apart, both))
