#!/usr/bin/python3
"""test-calibrate CHSIM: the calibration search on two settings, scored on one row: every row of
calibration.txt is reported, fitted or held out; each setting's score is the mean squared
residual of the fitted rows only; the best setting printed is the lowest score."""
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
    best = " ".join(f"--{k.split(':')[0]} {k.split(':')[1]}={v}" for k, v in res[0]["point"].items())
    check(("best setting: " + best) in text, "the best setting printed is the lowest score")
    r = subprocess.run([sys.executable, os.path.join(here, "calibrate"), sys.argv[1], "--fit", "nosuch"],
                       capture_output=True, text=True)
    check(r.returncode != 0 and "nosuch" in r.stderr, "an unknown --fit row is refused")
finish()
