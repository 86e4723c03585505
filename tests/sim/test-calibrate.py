#!/usr/bin/python3
"""test-calibrate CHSIM: the calibration search on two settings, scored on one row: every row of
calibration.txt is reported, fitted or held out; each setting's score is the mean squared
residual of the fitted rows only, which are all a setting other than the best is simulated on;
the best setting printed is the lowest score.  Then --descend on one row: it starts at chsim's
own defaults and ends no worse than they score."""
import json
import os
import re
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "lib"))
from checks import check, finish  # noqa: E402


rows = [line.split()[1] for line in open(os.path.join(here, "calibration.txt"))
        if line.split() and not line.startswith("#")]
with tempfile.TemporaryDirectory() as d:
    out = os.path.join(d, "cal.json")
    r = subprocess.run([sys.executable, os.path.join(here, "calibrate"), sys.argv[1], "--points", "2",
                        "--fit", "letter-sysbench-16x4,letter-pgbench-16x4", "--json", out],
                       capture_output=True, text=True)
    check(r.returncode == 0, f"calibrate exits 0 ({r.stderr.strip()[-200:]})")
    text = r.stdout
    for row in rows:
        role = "fitted" if row in ("sysbench-16x4", "pgbench-16x4") else "held out"
        check(re.search(rf"^\| {re.escape(row)} \|.*\| {role} \|$", text, re.M) is not None,
              f"row {row} reported as {role}")
    doc = json.load(open(out))
    res = doc["results"]
    check(len(res) == 2, "two settings tried")
    for r_ in res:
        fitted = [r_["rows"][k]["sigmas"] for k in ("letter-sysbench-16x4", "letter-pgbench-16x4")]
        want = sum(x * x for x in fitted) / 2
        check(abs(r_["score"] - want) < 1e-9, f"score {r_['score']:.3f} is the fitted rows' mean square {want:.3f}")
    check(res[0]["score"] <= res[1]["score"], "settings sorted by score")
    check(set(res[1]["rows"]) == {"letter-sysbench-16x4", "letter-pgbench-16x4"},
          f"a setting other than the best was simulated on the fitted rows only ({sorted(res[1]['rows'])})")
    check(len(res[0]["rows"]) == len(rows), f"the best setting was simulated on every row ({len(res[0]['rows'])})")
    best = " ".join(f"--{k.split(':')[0]} {k.split(':')[1]}={v}" for k, v in res[0]["point"].items())
    check(("best setting: " + best) in text, "the best setting printed is the lowest score")
    r = subprocess.run([sys.executable, os.path.join(here, "calibrate"), sys.argv[1], "--fit", "nosuch"],
                       capture_output=True, text=True)
    check(r.returncode != 0 and "nosuch" in r.stderr, "an unknown --fit row is refused")
    # --descend: a coordinate descent from chsim's own defaults, never worse than they are
    r = subprocess.run([sys.executable, os.path.join(here, "calibrate"), sys.argv[1], "--descend",
                        "--fit", "letter-sysbench-16x4", "--json", out], capture_output=True, text=True)
    check(r.returncode == 0, f"calibrate --descend exits 0 ({r.stderr.strip()[-200:]})")
    check("coordinate descent" in r.stdout, "the report names the descent")
    doc = json.load(open(out))
    subprocess.run([sys.argv[1], "--scenario", "letter-sysbench-16x4", "--json", out], check=True,
                   stdout=subprocess.DEVNULL)
    chsim = json.load(open(out))
    want = {}
    for k in doc["start"] or {}:
        kind, name = k.split(":")
        want[k] = chsim["costs"][name] if kind == "cost" else chsim["shapes"][name.split(".")[0]][name.split(".")[1]]
    check(doc["start"] and doc["start"] == want, f"the descent starts at chsim's defaults ({doc['start']})")
    starts = [x for x in doc["results"] if x["point"] == doc["start"]]
    check(len(starts) >= 1 and doc["results"][0]["score"] <= starts[0]["score"],
          "the best setting scores no worse than the defaults")
    check(len(doc["results"][0]["rows"]) == len(rows), "the best setting was simulated on every row")
finish()
