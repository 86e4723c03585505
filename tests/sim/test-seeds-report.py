#!/usr/bin/python3
"""Unit test of seeds-report on synthetic chsim JSON: medians over seeds, the calibration
verdict against the reference (within two standard deviations or not), the marking of
corehint's figures, and the refusal of a seed given twice."""
import json
import os
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "lib"))
from checks import check, finish  # noqa: E402


def sim(seed, gov_a, gov_b):
    # scenario a: the governor gains gov_a; b: gov_b; c: no reference
    def sc(name, gov):
        return {"name": name, "what": name, "policies": {
            "none": {"units_per_s": 100.0}, "governor": {"units_per_s": 100.0 * gov},
            "corehint": {"units_per_s": 120.0 + seed}}}
    # d: +37.5 %, 2.5 of the reference's standard deviations off: just outside the tolerance
    return {"simulated": True, "seed": seed, "scenarios": [sc("a", gov_a), sc("b", gov_b), sc("c", 1.0),
                                                          sc("d", 1.375)]}


with tempfile.TemporaryDirectory() as d:
    ref = os.path.join(d, "ref.txt")
    with open(ref, "w") as f:
        f.write("# comment\na a-row 50.0 5.0\nb b-row 50.0 5.0\nd d-row 50.0 5.0\n")
    files = []
    for seed in range(1, 8):
        # a: +50 % +- a little (calibrated); b: +20 % (six std off: not calibrated)
        p = os.path.join(d, f"s{seed}.json")
        json.dump(sim(seed, 1.5 + (seed - 4) * 0.01, 1.2), open(p, "w"))
        files.append(p)
    env = dict(os.environ, SEEDS_REPORT_JSON=os.path.join(d, "out.json"))
    r = subprocess.run([sys.executable, os.path.join(here, "seeds-report"), ref] + files,
                       capture_output=True, text=True, env=env)
    check(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
    out = r.stdout
    check("| a | 1.500 [" in out and "| a-row: +50.00 % ± 5.00 % (= 1.500) | yes |" in out,
          "a: median 1.500 over seeds, calibrated")
    check("| a | 1.500 [1.470, 1.530] |" in out, "a: the interval of 7 seeds is [min, max] (98.4 %)")
    check("| b | 1.200 [1.200, 1.200] | b-row: +50.00 % ± 5.00 % (= 1.500) | NO |" in out, "b: not calibrated")
    check("| c | 1.000 [1.000, 1.000] | no row of this shape | - |" in out, "c: no reference")
    check("| d | 1.375 [1.375, 1.375] | d-row: +50.00 % ± 5.00 % (= 1.500) | NO |" in out,
          "d: 2.5 standard deviations off is not calibrated")
    check("| a | 1.240 [" in out and out.count("| UNCALIBRATED |") == 2 and "| calibrated |" in out
          and "| no reference |" in out, "corehint's rows marked by the verdict (corehint/none median 124/100)")
    doc = json.load(open(os.path.join(d, "out.json")))
    check(doc["seeds"] == list(range(1, 8)) and len(doc["scenarios"]["a"]["governor_over_none"]) == 7,
          "JSON: every seed's ratio kept")
    check(doc["scenarios"]["a"]["calibrated"] is True and doc["scenarios"]["b"]["calibrated"] is False
          and doc["scenarios"]["c"]["calibrated"] is None, "JSON: the verdicts")
    r = subprocess.run([sys.executable, os.path.join(here, "seeds-report"), ref, files[0], files[0]],
                       capture_output=True, text=True)
    check(r.returncode != 0 and "the same seed twice" in r.stderr, "a seed given twice is refused")

finish()
