#!/usr/bin/env python3
# per-second host view of every qemu thread: run and run-queue wait deltas (ms per s)
import glob, os, sys, time
out = open(sys.argv[1], "a", buffering=1)
prev = {}
while True:
    now = time.time()
    rows = []
    for pf in glob.glob("/run/libvirt/qemu/*.pid"):
        dom = os.path.basename(pf)[:-4]
        try:
            pid = int(open(pf).read())
        except Exception:
            continue
        for t in glob.glob("/proc/%d/task/*" % pid):
            try:
                comm = open(t + "/comm").read().strip()
                run, wait, n = map(int, open(t + "/schedstat").read().split())
                st = open(t + "/stat").read().rsplit(")", 1)[1].split()
                cpu = st[36]
                state = st[0]
            except Exception:
                continue
            k = (dom, t)
            if k in prev:
                r0, w0, n0, t0 = prev[k]
                dt = now - t0
                rows.append("%s %s %s cpu%s %s run %.0f wait %.0f sw %d" % (
                    dom[-9:-6], t.rsplit("/", 1)[1], comm.replace(" ", "_"), cpu, state,
                    (run - r0) / 1e6 / dt, (wait - w0) / 1e6 / dt, n - n0))
            prev[k] = (run, wait, n, now)
    out.write("T %.1f\n" % now)
    for r in rows:
        out.write(r + "\n")
    time.sleep(1)
