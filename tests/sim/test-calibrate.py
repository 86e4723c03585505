#!/usr/bin/python3
"""test-calibrate CHSIM: the calibration search on two settings, scored on two rows: every row of
calibration.txt is reported, fitted or held out; each setting's score is the mean squared
residual of the fitted rows only, which are all a setting other than the best is simulated on;
the best setting printed is the lowest score.  Then one pass of --descend on one row: it starts
at chsim's own defaults, each step changes one setting and lowers the score, every setting
tried is one change from its path and none is simulated twice, and it ends at the best."""
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
# the cover letter's 22 x86 rows (README.md, "Calibration"): every loop below is over them, so a
# table that lost its rows would otherwise pass them all
check(len(rows) == 22 and len(set(rows)) == 22,
      f"calibration.txt holds the letter's 22 rows ({len(rows)})")
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
    # --descend: a coordinate descent from chsim's own defaults (one pass, to keep the test short)
    r = subprocess.run([sys.executable, os.path.join(here, "calibrate"), sys.argv[1], "--descend",
                        "--max-passes", "1", "--fit", "letter-hackbench-4x16", "--json", out],
                       capture_output=True, text=True)
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
    path = doc["path"]
    check(path and path[0]["point"] == doc["start"], "its path starts there")
    # each step changes one setting and lowers the score; the best setting is where it ended
    for a, b in zip(path, path[1:]):
        diff = [k for k in a["point"] if a["point"][k] != b["point"][k]]
        check(len(diff) == 1 and b["score"] < a["score"],
              f"a step changes one setting ({diff}) and lowers the score ({a['score']:.2f} -> {b['score']:.2f})")
    best = doc["results"][0]
    check(best["point"] == path[-1]["point"], "the best setting is the end of the path")
    # every setting tried is one setting away from a point of the path, and none twice
    keys = [tuple(sorted(x["point"].items())) for x in doc["results"]]
    check(len(keys) == len(set(keys)), f"no setting simulated twice ({len(keys)} results)")
    check(all(any(sum(x["point"][k] != p["point"][k] for k in p["point"]) <= 1 for p in path)
              for x in doc["results"]), "every setting tried is one change from the path")
    check(len(best["rows"]) == len(rows), "the best setting was simulated on every row")
finish()
