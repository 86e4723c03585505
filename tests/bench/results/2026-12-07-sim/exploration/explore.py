#!/usr/bin/python3
# exploration: per-row workload scaled with the VM's vCPUs; prints residuals per row
import concurrent.futures, json, subprocess, sys, tempfile, itertools, os
chsim = "/tmp/devb/tests/sim/chsim"
ref = {}
for line in open("/work/main/tests/sim/calibration.txt"):
    f = line.split()
    if f and not f[0].startswith("#"):
        ref[f[0]] = (float(f[2]), float(f[3]))
def shape(sc):
    _, w, nv = sc.split("-")
    n, v = map(int, nv.split("x"))
    return w, n, v
def run(sc, works, costs, seed=1):
    cmd = [chsim, "--seed", str(seed), "--scenario", sc]
    for k, v in works.items(): cmd += ["--work", f"{k}={v}"]
    for k, v in costs.items(): cmd += ["--cost", f"{k}={v}"]
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        subprocess.run(cmd + ["--json", out.name], check=True, stdout=subprocess.DEVNULL)
        d = json.load(open(out.name))
    pol = d["scenarios"][0]["policies"]
    return (pol["governor"]["units_per_s"] / pol["none"]["units_per_s"] - 1) * 100
def evaluate(hyp, costs, seed=1, jobs=2):
    def one(sc):
        w, n, v = shape(sc)
        return sc, run(sc, hyp(w, n, v), costs, seed)
    with concurrent.futures.ThreadPoolExecutor(jobs) as p:
        res = dict(p.map(one, ref))
    return res
def report(name, res):
    ok = 0; ss = 0
    lines = []
    for sc, g in res.items():
        m, s = ref[sc]; r = (g - m) / s; ss += r * r; ok += abs(r) <= 2
        lines.append(f"  {sc:24s} letter {m:+7.2f} sim {g:+7.2f} resid {r:+6.1f}")
    print(f"{name}: within2={ok}/22 meansq={ss/22:.1f}", flush=True)
    return ok, ss / 22, lines
