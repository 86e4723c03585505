#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Regenerate the hand-designed replay traces of test-hostd.py.  Each trace is a list of
per-second rates; this turns them into the cumulative counters corehint-hostd records."""

import json
import os

S = 10**9
HERE = os.path.dirname(os.path.abspath(__file__))


def uuid(n):
    return "00000000-0000-4000-8000-%012d" % n


class Trace:
    def __init__(self, npcpu):
        self.npcpu = npcpu
        self.t = 100 * S
        self.busy = [0] * npcpu
        self.idle = [0] * npcpu
        self.vcpu = {}  # (uuid, id) -> [time, delay]
        self.lines = []

    def sample(self, doms, busy=None):
        """doms: list of (n, name, [(run, wait, pcpu, affinity)...], extra dict)."""
        out = []
        for n, name, vcpus, extra in doms:
            vs = []
            for i, (run, wait, pcpu, aff) in enumerate(vcpus):
                c = self.vcpu.setdefault((n, i), [0, 0])
                if extra.get("reset"):
                    c[0], c[1] = 0, 0
                c[0] += int(run * S)
                c[1] += int(wait * S)
                v = {"id": i, "time_ns": c[0], "delay_ns": c[1], "pcpu": pcpu}
                if aff:
                    v["affinity"] = aff
                vs.append(v)
            d = {"name": name, "uuid": uuid(n), "state": 1, "threads": extra.get("threads", 1),
                 "shares": 0, "vcpus": vs}
            if extra.get("applied"):  # what the guest acknowledged applying in host mode
                d["applied"] = extra["applied"]
            if "policy" in extra:  # the domain's corehint metadata as hostd parsed it
                d["policy"] = extra["policy"]
            out.append(d)
        for p in range(self.npcpu):
            b = 1.0 if busy is None else busy[p]
            self.busy[p] += int(b * S)
            self.idle[p] += int((1 - b) * S)
        line = {"t_ns": self.t, "npcpu": self.npcpu,
                "pcpu": [{"busy_ns": self.busy[p], "idle_ns": self.idle[p]}
                         for p in range(self.npcpu)],
                "domains": out}
        self.lines.append(json.dumps(line, separators=(",", ":")))
        self.t += S

    def write(self, name, comment):
        with open(os.path.join(HERE, name), "w") as f:
            f.write("# " + comment + "\n")
            f.write("\n".join(self.lines) + "\n")


def busy2(run=0.5, wait=0.5):
    return [(run, wait, 0, None), (run, wait, 1, None)]


def small():
    """The traces kept in the tree."""
    # Two 2-vCPU VMs, all four vCPUs busy on two pCPUs: each shrinks to vCPU 0 after 2 intervals.
    t = Trace(2)
    for _ in range(5):
        t.sample([(1, "a", busy2(), {}), (2, "b", busy2(), {})])
    t.write("overcommit-2x.jsonl", "2 VMs x 2 busy vCPUs on 2 pCPUs, floating")

    # Same, then b goes idle: a, packed on vCPU 0 and saturating it, grows back at once.
    t = Trace(2)
    for _ in range(4):
        t.sample([(1, "a", busy2(), {}), (2, "b", busy2(), {})])
    for _ in range(3):
        t.sample([(1, "a", [(1.0, 0.0, 0, None), (0.0, 0.0, 1, None)], {}),
                  (2, "b", busy2(0.01, 0.0), {})], busy=[1.0, 0.02])
    t.write("contention-clears.jsonl", "2x overcommit, then b idles: a grows back")

    # Churn: c appears, a vanishes, b restarts (counters reset).
    t = Trace(2)
    for _ in range(3):
        t.sample([(1, "a", busy2(), {}), (2, "b", busy2(), {})])
    t.sample([(1, "a", busy2(), {}), (2, "b", busy2(), {}), (3, "c", busy2(), {})])
    t.sample([(2, "b", busy2(), {"reset": True}), (3, "c", busy2(), {})])
    t.sample([(2, "b", busy2(), {}), (3, "c", busy2(), {})])
    t.write("churn.jsonl", "domain appears, vanishes, restarts")

    # Pinned: p has vCPU i on pCPU i; q's two vCPUs sit on pCPUs 2 and 3.  p keeps the vCPUs on
    # the pCPUs it does not share.
    t = Trace(4)
    for _ in range(3):
        t.sample([(1, "p", [(1.0, 0.0, 0, "0"), (1.0, 0.0, 1, "1"), (0.5, 0.5, 2, "2"),
                            (0.5, 0.5, 3, "3")], {}),
                  (2, "q", [(0.5, 0.5, 2, "2"), (0.5, 0.5, 3, "3")], {})])
    t.write("pinned.jsonl", "pinned VMs sharing pCPUs 2-3")


    # A VM ignoring its hint: rebel acknowledges {0} like good but keeps running both vCPUs,
    # then complies; good packs onto vCPU 0 as soon as it is told.
    t = Trace(2)
    for i in range(11):
        rebel = busy2() if i < 8 else [(1.0, 0.0, 0, None), (0.0, 0.0, 1, None)]
        good = busy2() if i < 3 else [(1.0, 0.0, 0, None), (0.0, 0.0, 1, None)]
        acked = {"applied": "0"} if i >= 2 else {}
        t.sample([(1, "rebel", rebel, acked), (2, "good", good, acked)])
    t.write("noncompliant.jsonl", "rebel ignores its hint for 5 intervals, then complies")


def scale(path, nvm=100, samples=60):
    """nvm VMs x 4 vCPUs on 16 pCPUs (too big for the tree: written on demand)."""
    t = Trace(16)
    doms = [(n, "vm%03d" % n, [(0.4, 0.3, (n * 4 + i) % 16, None) for i in range(4)], {})
            for n in range(1, nvm + 1)]
    for _ in range(samples):
        t.sample(doms)
    with open(path, "w") as f:
        f.write("\n".join(t.lines) + "\n")


if __name__ == "__main__":
    import sys
    if len(sys.argv) == 3 and sys.argv[1] == "--scale":
        scale(sys.argv[2])
    else:
        small()
