#!/usr/bin/python3
"""Unit test of the benchmark report's statistics (benchstats.py, guests-report) on synthetic
sample files: one sample per run, bootstrap intervals, timeouts as bounds, reproducibility."""
import json
import os
import random
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "lib"))
from checks import check, finish  # noqa: E402
sys.path.insert(0, here)
import benchstats  # noqa: E402


# --- benchstats alone ---------------------------------------------------------------------
med, lo, hi = benchstats.median_ci([1.0, 2.0, 3.0])
check(med == 2.0 and lo is None and hi is None, f"3 samples: no 95 % interval of a median, got [{lo}, {hi}]")
med, lo, hi = benchstats.median_ci([float(x) for x in range(10, 0, -1)])
check(med == 5.5 and (lo, hi) == (2.0, 9.0), f"10 samples: [x(2), x(9)] (97.9 %), got {med} [{lo}, {hi}]")
med, lo, hi = benchstats.median_ci([float(x) for x in range(1, 21)])
check((lo, hi) == (6.0, 15.0), f"20 samples: [x(6), x(15)] (95.9 %), got [{lo}, {hi}]")
check(benchstats.median_ci([float(x) for x in range(1, 21)], level=0.5)[1:] == (8.0, 13.0),
      "the level is honoured: 20 samples at 50 % give [x(8), x(13)] (73.7 %)")
med, lo, hi = benchstats.median_ci([5.0] * 10)
check(med == lo == hi == 5.0, "constant samples: a zero-width interval")
p, lo, hi = benchstats.ratio_ci([3.0] * 10, [6.0] * 10, "t")
check(p == lo == hi == 0.5, f"constant ratio 0.5, got {p} [{lo}, {hi}]")
p, lo, hi = benchstats.ratio_ci([3.0] * 5, [6.0] * 10, "t")
check(p == 0.5 and lo is None, "fewer than 6 runs on a side: no ratio interval")
xs, ys = [float(x) for x in range(1, 11)], [float(x) for x in range(11, 21)]
p, lo, hi = benchstats.ratio_ci(xs, ys, "known")
check(abs(p - 5.5 / 15.5) < 1e-12 and 0.15 < lo < p < hi < 0.6,
      f"ratio interval around 5.5/15.5 and inside what resampling allows, got {p} [{lo}, {hi}]")
check((p, lo, hi) == benchstats.ratio_ci(xs, ys, "known"), "same tag, same interval")
check(benchstats.median_bound([(35.0, True), (42.0, False), (43.0, False), (44.0, False), (45.0, False)]),
      "a bounded run below the median still makes the median a lower bound (35 -> inf: 43 -> 44)")
check(not benchstats.median_bound([(99.0, True), (1.0, False), (2.0, False), (3.0, False), (4.0, False)]),
      "a bounded run above the median leaves it exact")
r = benchstats.runs([("s", "m", "1", "g1", "4"), ("s", "m", "1", "g2", "timeout"),
                     ("s", "m", "2", "g1", "3"), ("s", "m", "2", "g2", "5"),
                     ("s", "m", "10", "g1", "1"), ("s", "m", "10", "g2", "1")], 60)
check([(rep, x, b) for rep, x, b, _ in r["s"]["m"]] == [("1", 32.0, True), ("2", 4.0, False), ("10", 1.0, False)],
      f"runs: mean per run, timeout as the bound, reps in numeric order; got {r['s']['m']}")

# --- guests-report on synthetic files ---------------------------------------------------
rng = random.Random(7)
reps = 10
modes = {"none": (10.0, 1.0), "steal-governor": (10.0, 1.0), "corehint": (6.0, 0.5)}
with tempfile.TemporaryDirectory() as d:
    with open(os.path.join(d, "guests-samples.txt"), "w") as f:
        for rep in range(1, reps + 1):
            for mode, (mu, sd) in modes.items():
                # a run's guests share its conditions: a per-run offset plus per-guest noise
                run = rng.gauss(mu, sd)
                for g in ("a", "b"):
                    print("2x2-pinned", mode, rep, f"2x2-{g}", f"{run + rng.gauss(0, 0.2):.3f}", file=f)
                # the same distribution in every mode: the interval must contain 1
                run = rng.gauss(8.0, 1.0)
                for g in ("a", "b"):
                    print("same-floating", mode, rep, f"same-{g}", f"{run + rng.gauss(0, 0.2):.3f}", file=f)
                # one run of ten in "none" with a timed-out guest whose run still ranks low
                # (the other guest was quick): the median is a lower bound all the same
                for g in ("a", "b"):
                    if mode == "none" and rep == 1:
                        secs = "timeout" if g == "a" else "1.000"
                    else:
                        secs = f"{rng.gauss(40, 0.5) if mode == 'none' else rng.gauss(30, 0.5):.3f}"
                    print("lowbound-pinned", mode, rep, f"lb-{g}", secs, file=f)
                # timeouts in "none" for six runs of ten (one guest of two each)
                for g in ("a", "b"):
                    secs = "timeout" if mode == "none" and rep <= 6 and g == "a" else f"{rng.gauss(20, 1):.3f}"
                    print("slow-pinned", mode, rep, f"slow-{g}", secs, file=f)
    for name in ("guests-converge.txt", "guests-host-wait.txt", "guests-steal.txt", "guests-step.txt"):
        open(os.path.join(d, name), "w").close()
    # background work of 2x2:hackbench (key with a workload): per run each guest did 100 Mops
    # ("none": in 10 s; "corehint": in 5 s), a warmup row that must not count
    with open(os.path.join(d, "guests-samples.txt"), "a") as f, \
            open(os.path.join(d, "guests-background.txt"), "w") as b:
        print("2x2-floating:hackbench warmup 0 2x2-a 999 1.0", file=b)
        for rep in range(1, 4):
            for mode, secs in (("none", 10.0), ("corehint", 5.0)):
                for g in ("a", "b"):
                    print("2x2-floating:hackbench", mode, rep, f"2x2-{g}", secs, file=f)
                    print("2x2-floating:hackbench", mode, rep, f"2x2-{g}", 100, secs, file=b)
            # the oracle's static candidates: the best is oracle-1.2 (4 s)
            for mode, secs in (("oracle-1.1", 8.0), ("oracle-1.2", 4.0 + rep / 100), ("oracle-2.2", 10.0)):
                for g in ("a", "b"):
                    print("2x2-floating:hackbench", mode, rep, f"2x2-{g}", secs, file=f)
                    if mode == "oracle-1.2":  # a background that did nothing: no ratio over it
                        print("2x2-floating:hackbench", mode, rep, f"2x2-{g}", 0, secs, file=b)
    with open(os.path.join(d, "guests-steal.txt"), "w") as f:
        print("2x2 steal 2x2-a 7", file=f)

    def report():
        p = subprocess.run([sys.executable, os.path.join(here, "guests-report"), d, "30"],
                           capture_output=True, text=True)
        check(p.returncode == 0, f"guests-report exit {p.returncode}: {p.stderr}")
        return p.stdout, open(os.path.join(d, "guests.json")).read()

    md, js = report()
    doc = json.loads(js)
    sc = doc["scenarios"]
    for name in ("2x2-pinned", "same-floating", "slow-pinned", "lowbound-pinned"):
        for mode in modes:
            e = sc[name]["modes"][mode]
            check(e["runs"] == reps, f"{name}/{mode}: {reps} runs (one sample per run), got {e['runs']}")
            check(len(e["run_samples"]) == reps and all(len(r["guests_s"]) == 2 for r in e["run_samples"]),
                  f"{name}/{mode}: raw per-guest samples kept")
            lo, hi = e["median_ci95_s"]
            check(lo <= e["median_s"] <= hi and lo < hi, f"{name}/{mode}: {lo} <= median {e['median_s']} <= {hi}")
    first = sc["2x2-pinned"]["modes"]["none"]["run_samples"][0]
    check(abs(first["s"] - sum(first["guests_s"]) / 2) < 1e-9, "a run's sample is its guests' mean")
    lo, hi = sc["2x2-pinned"]["corehint_over_none_ci95"]
    check(hi < 1.0 and lo <= sc["2x2-pinned"]["corehint_over_none"] <= hi,
          f"2x2: corehint clearly faster, interval below 1: [{lo}, {hi}]")
    lo, hi = sc["same-floating"]["corehint_over_none_ci95"]
    check(lo < 1.0 < hi, f"same distribution: interval contains 1: [{lo}, {hi}]")
    slow = sc["slow-pinned"]
    check(slow["modes"]["none"]["runs_with_timeout"] == 6 and slow["modes"]["none"]["median_is_lower_bound"],
          "six runs of ten with a timeout: the median is a lower bound")
    check(slow["corehint_over_none_is_upper_bound"] and not slow["corehint_over_steal_governor_is_upper_bound"],
          "a ratio over a bounded median is an upper bound, the others are not")
    check("| slow-pinned | none | 10 | 6 | >=" in md, "the table marks the bounded median")
    lb = sc["lowbound-pinned"]
    check(lb["modes"]["none"]["median_is_lower_bound"] and lb["corehint_over_none_is_upper_bound"],
          "a timed-out run ranked below the median: the median is a lower bound, the ratio an upper one")
    check(lb["modes"]["none"]["median_ci95_includes_bound"] and "| lowbound-pinned | none | 10 | 1 | >=" in md,
          "... and its interval is marked as including a bounded run")
    check(not lb["modes"]["corehint"]["median_ci95_includes_bound"], "an interval without a bounded run is not marked")
    check("corehint/none <=" in md, "the ratio line marks the bound")
    wl = sc["2x2-floating:hackbench"]
    check(wl["modes"]["none"]["background_mops_per_s_median"] == 20.0 and
          wl["modes"]["corehint"]["background_mops_per_s_median"] == 40.0,
          "background work: Mops/s summed over a run's guests, median over runs, warmup left out: "
          f"{wl['modes']['none']['background_mops_per_s_median']}, "
          f"{wl['modes']['corehint']['background_mops_per_s_median']}")
    check("| 2x2-floating:hackbench | none | 3 | 0 | 10.00" in md and md.count("| 20.0 |") == 1,
          "the table has the workload's row and its background column")
    check(wl["guest_steal_ticks"] == [7], "a workload's row finds its guests' steal counters")
    check(wl.get("corehint_background_over_none") == 2.0 and wl.get("corehint_background_over_none_ci95") is None
          and "corehint_background_over_oracle" not in wl and "background work corehint/none 2.000" in md,
          f"corehint's background over none's (3 runs a side: no interval), none over the oracle's "
          f"background of no work: {wl.get('corehint_background_over_none')}")
    check(wl.get("oracle_best") == "oracle-1.2" and abs(wl["corehint_over_oracle"] - 5.0 / 4.02) < 1e-9,
          f"the oracle is the best static candidate: {wl.get('oracle_best')}, corehint/oracle "
          f"{wl.get('corehint_over_oracle')}")
    check("| 2x2-floating:hackbench | oracle-2.2 | 3 |" in md and "best static sets: oracle-1.2" in md,
          "every candidate has its row, the ratio line names the best")
    check("oracle_best" not in sc["2x2-pinned"], "no candidates, no oracle")
    check(sc["2x2-pinned"]["modes"]["none"]["background_mops_per_s_median"] is None,
          "no background file rows: no figure")
    check("EMULATED STEAL" not in md and "Guest clock" not in md, "no feed, no clock file: neither is claimed")
    # EMULATED STEAL: a feed, the guests' clock, the governors' per-run state
    with open(os.path.join(d, "guests-stealfeed-2x2.json"), "w") as f:
        json.dump({"interval_ms": 100, "guests": [
            {"socket": "/x/2x2-a.steal.sock", "qemu_pid": 1, "lines_sent": 10, "lines_answered": 9,
             "lines_dropped": 1, "steal_fed_ns": 2500000000, "latency_ms_median": 10.5,
             "latency_ms_p95": 90.0, "latency_ms_max": 400.0}]}, f)
    with open(os.path.join(d, "guests-clock.txt"), "w") as f:
        print("2x2 2x2-a tsc", file=f)
    with open(os.path.join(d, "guests-governor.txt"), "w") as f:
        # run 1: loaded in both, narrowed before the run and held; run 2: one guest without the
        # module, nothing narrowed; steal 100 ticks over 10 s of 2 vCPUs: a share of 0.05
        print("2x2-floating:hackbench steal-governor 1 2x2-a 2 1 0 0 0 100 10.00", file=f)
        print("2x2-floating:hackbench steal-governor 1 2x2-b 2 1 0 0 0 100 10.00", file=f)
        print("2x2-floating:hackbench steal-governor 2 2x2-a 2 0 0 0-1 0-1 300 10.00", file=f)
        print("2x2-floating:hackbench steal-governor 2 2x2-b 2 1 2 0-1 0-1 300 10.00", file=f)
    with open(os.path.join(d, "guests-samples.txt"), "a") as f:
        for rep in (1, 2):
            for g in ("a", "b"):
                print("2x2-floating:hackbench steal-governor", rep, f"2x2-{g}", 7.0, file=f)
    md, js = report()
    doc = json.loads(js)
    check(md.startswith("Guest clock: clocksource tsc") and "**EMULATED STEAL**" in md.split("\n\n")[1],
          "the report opens with the guests' clock and the EMULATED STEAL label")
    check(doc["emulated_steal"]["2x2"]["guests"][0]["latency_ms_median"] == 10.5 and
          "| 2x2 | 2x2-a | 10 | 9 | 1 | 2.5 | 10.5 | 90.0 | 400.0 |" in md, "the feed's table row")
    g = doc["scenarios"]["2x2-floating:hackbench"]["modes"]["steal-governor"]["governor"]
    check(g["runs"] == 2 and g["runs_loaded_in_every_guest"] == 1 and g["runs_acted"] == 2 and
          g["runs_with_a_set_change"] == 1, f"governor runs: loaded 1 of 2, acted 2 of 2, changed 1 of 2: {g}")
    check(abs(g["guest_steal_share_median"] - 0.10) < 1e-9,
          f"steal share: the median over runs of 0.05 and 0.15, got {g['guest_steal_share_median']}")
    check("| 2x2-floating:hackbench | steal-governor | 2 | 1 of 2 | 2 of 2 | 1 of 2 | 0 | 0.10 |" in md,
          "the governors' table row")
    runs_txt = open(os.path.join(d, "guests-runs.txt")).read().split("\n")
    check(sum(1 for l in runs_txt if l.startswith("2x2-pinned corehint ")) == reps, "guests-runs.txt: a row per run")
    md2, js2 = report()
    check(md == md2 and js == js2, "the report is reproducible from its samples")

# --- guests-summary over the per-scenario runs ---------------------------------------------
with tempfile.TemporaryDirectory() as d:
    a, b, gone, bad = (os.path.join(d, x) for x in ("a", "b", "gone", "bad"))
    for x in (a, b, bad):
        os.mkdir(x)
    ten = {"none": {"runs": 10}, "corehint": {"runs": 10}}
    with open(os.path.join(a, "guests.json"), "w") as f:
        json.dump({"scenarios": {"s1": {
            "modes": dict(ten, **{"steal-governor": {"runs": 10, "governor": {
                "runs": 10, "runs_loaded_in_every_guest": 10, "runs_acted": 9}}}),
            "corehint_over_none": 0.5, "corehint_over_none_ci95": [0.4, 0.6],
            "corehint_over_oracle": 1.3, "corehint_over_oracle_ci95": [1.1, 1.5],
            "corehint_background_over_none": 0.08, "corehint_background_over_none_ci95": [0.05, 0.13],
            "corehint_background_over_oracle": 0.5, "corehint_background_over_oracle_ci95": None,
            "oracle_best": "oracle-1.1"}}}, f)
    with open(os.path.join(b, "guests.json"), "w") as f:
        json.dump({"scenarios": {
            "s2": {"modes": dict(ten, corehint={"runs": 9}), "corehint_over_none": 0.9,
                   "corehint_over_none_ci95": [0.8, 1.2], "corehint_over_none_is_upper_bound": True},
            # bounds: an upper bound above 1 shows nothing, a lower bound below 1 neither, and
            # an unknown one nothing either way; no interval is said so
            "s3": {"modes": ten, "corehint_over_none": 1.3, "corehint_over_none_ci95": [1.1, 1.5],
                   "corehint_over_none_is_upper_bound": True,
                   "corehint_over_steal_governor": 0.7, "corehint_over_steal_governor_ci95": [0.6, 0.8],
                   "corehint_over_steal_governor_is_lower_bound": True,
                   "corehint_over_oracle": 0.7, "corehint_over_oracle_ci95": [0.6, 0.8],
                   "corehint_over_oracle_is_unknown": True},
            "s4": {"modes": ten, "corehint_over_none": 0.8, "corehint_over_none_ci95": None}}}, f)
    with open(os.path.join(bad, "guests.json"), "w") as f:
        f.write('{"scenarios": ')
    p = subprocess.run([sys.executable, os.path.join(here, "guests-summary"), a, b, gone, bad],
                       capture_output=True, text=True)
    rows = {l.split("|")[1].strip(): l.rstrip() for l in p.stdout.splitlines()
            if l.startswith("| s") and "|---" not in l}
    s1, s2, s3, s4 = (rows.get(k, "") for k in ("s1", "s2", "s3", "s4"))
    check(p.returncode == 1 and f"{gone}: no readable guests.json" in p.stdout
          and f"{bad}: no readable guests.json" in p.stdout,
          f"a missing or broken guests.json is named and fails the summary: {p.returncode} {p.stdout}")
    check("| 0.500 [0.400, 0.600] |" in s1 and "| 1.300 [1.100, 1.500] |" in s1
          and "| oracle-1.1 |" in s1 and "loaded 10/10, acted 9/10" in s1 and s1.startswith("| s1 | 10 |"),
          f"ratios with intervals, the best static sets, the governor's runs: {s1}")
    check(s1.endswith("| faster than none; **slower** than oracle |"), f"the verdict follows the intervals: {s1}")
    check("| 0.08 [0.05, 0.13]; -; 0.50 (no interval) |" in s1,
          f"the background work beside the times, '-' for a mode without it: {s1}")
    check("| -; -; - |" in s2, f"no background figures, no background ratios: {s2}")
    check("| <= 0.900 [0.800, 1.200] |" in s2 and "| - |" in s2 and s2.startswith("| s2 | 9/10 |")
          and s2.endswith("| no difference shown |"),
          f"a bound is marked, a missing mode is '-', unequal run counts shown, an interval across 1 "
          f"shows nothing: {s2}")
    check("| <= 1.300 [1.100, 1.500] |" in s3 and "| >= 0.700 [0.600, 0.800] |" in s3
          and "| ? 0.700 [0.600, 0.800] |" in s3 and s3.endswith("| no difference shown |"),
          f"no verdict from a bound against its direction or from an unknown one: {s3}")
    check("| 0.800 (no interval) |" in s4 and s4.endswith("| no difference shown |"),
          f"a ratio without an interval is said so and shows nothing: {s4}")

# --- oracle-modes: the oracle's candidates ---------------------------------------------------
for args, want in ((("all", "2", "2"), "oracle-1.1 oracle-1.2 oracle-2.2"),
                   (("equal", "2", "2"), "oracle-1.1 oracle-2.2"),
                   (("all", "3", "2"), "oracle-1.1.1 oracle-1.1.2 oracle-1.2.2 oracle-2.2.2"),
                   (("equal", "2", "4"), "oracle-1.1 oracle-2.2 oracle-3.3 oracle-4.4"),
                   (("all", "3", "2", "first-differs"),
                    "oracle-1.1.1 oracle-1.1.2 oracle-1.2.2 oracle-2.1.1 oracle-2.1.2 oracle-2.2.2"),
                   (("equal", "3", "2", "first-differs"), "oracle-1.1.1 oracle-1.2.2 oracle-2.1.1 oracle-2.2.2"),
                   (("all", "1", "2"), "oracle-1 oracle-2"),
                   # pinned: the guests side by side too, for every equal count but all
                   (("all", "2", "2", "spread"), "oracle-1.1 oracle-1.2 oracle-2.2 oracle-1.1@1"),
                   (("equal", "2", "4", "spread"),
                    "oracle-1.1 oracle-2.2 oracle-3.3 oracle-4.4 oracle-1.1@1 oracle-2.2@2 oracle-3.3@3"),
                   (("equal", "3", "2", "spread"), "oracle-1.1.1 oracle-2.2.2 oracle-1.1@1.1"),
                   (("all", "1", "2", "spread"), "oracle-1 oracle-2")):
    p = subprocess.run([sys.executable, os.path.join(here, "oracle-modes"), *args], capture_output=True, text=True)
    check(p.returncode == 0 and p.stdout.split() == want.split(), f"oracle-modes {' '.join(args)}: {p.stdout!r}")
p = subprocess.run([sys.executable, os.path.join(here, "oracle-modes"), "some", "2", "2"], capture_output=True, text=True)
check(p.returncode != 0 and "usage" in p.stderr, f"oracle-modes refuses an unknown set: {p.returncode}")
for args in (("equal", "3", "2", "first-differs", "spread"), ("all", "2", "2", "spread", "spread"),
             ("all", "2", "2", "sideways")):
    p = subprocess.run([sys.executable, os.path.join(here, "oracle-modes"), *args], capture_output=True, text=True)
    check(p.returncode != 0 and p.stdout == "" and "oracle-modes" in p.stderr,
          f"oracle-modes {' '.join(args)} is refused: {p.returncode} {p.stdout!r}")
# tests/bench/guests turns a term into the set the guest must report, in the kernel's list form
for v, term, want in ((2, "1", "0"), (2, "2", "0-1"), (2, "1@1", "1"), (4, "2@2", "2-3"),
                      (4, "3@3", "0-1,3"), (4, "2@3", "0,3"), (4, "4", "0-3"), (3, "2@2", "0,2")):
    p = subprocess.run(["bash", "-c", 'source <(sed -n "/^oracle_cpulist()/,/^}/p" "$1"); vcpus=$2; '
                        'oracle_cpulist "$3"', "-", os.path.join(here, "guests"), str(v), term],
                       capture_output=True, text=True)
    check(p.returncode == 0 and p.stdout.strip() == want, f"oracle term {term} of {v} vCPUs: {p.stdout!r} {p.stderr!r}")
n10 = subprocess.run([sys.executable, os.path.join(here, "oracle-modes"), "all", "2", "4"],
                     capture_output=True, text=True).stdout.split()
check(len(n10) == 10 and len(set(n10)) == 10, f"2x4: every multiset of 1-4 once: {n10}")

finish()
