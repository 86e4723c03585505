"""Statistics of the benchmark reports: one sample per run, medians with bootstrap intervals.

A run is one execution of the workload in every guest of a scenario at once, in one mode.  Its
guests share the host and each other's contention, so they are not independent samples; the
run's sample is the mean of its guests' wall times (the time a unit of work took on this host,
averaged over the guests that shared it).  A run in which a guest hit the timeout has a sample
that is a lower bound.

Intervals are percentile bootstraps over runs (resampling runs with replacement, a fixed seed so
that a report is reproducible from its raw samples).  With n runs the interval of a median can
only move in steps of the sorted samples: at n = 10 it is a coarse interval, which is the point
of printing it.
"""
import random
import statistics

RESAMPLES = 10000
SEED = 20261205


def runs(rows, timeout):
    """rows: (scenario, mode, rep, guest, seconds-or-"timeout").  Returns
    {scenario: {mode: [(rep, sample_s, is_lower_bound, [guest seconds...]), ...]}} with one
    entry per (scenario, mode, rep), sorted by rep."""
    acc = {}
    for sc, mode, rep, _guest, secs in rows:
        r = acc.setdefault(sc, {}).setdefault(mode, {}).setdefault(rep, [[], False])
        if secs == "timeout":
            r[0].append(float(timeout))
            r[1] = True
        else:
            r[0].append(float(secs))
    out = {}
    for sc, by_mode in acc.items():
        for mode, by_rep in by_mode.items():
            lst = []
            for rep in sorted(by_rep, key=lambda k: (len(k), k)):
                xs, bound = by_rep[rep]
                lst.append((rep, statistics.fmean(xs), bound, xs))
            out.setdefault(sc, {})[mode] = lst
    return out


def _rng(tag):
    # one stream per quantity, independent of the order the report asks for them
    return random.Random(f"{SEED}/{tag}")


def median_ci(xs, tag="", level=0.95, resamples=RESAMPLES):
    """(median, low, high) of xs; the interval is a percentile bootstrap of the median."""
    if not xs:
        raise ValueError("no samples")
    med = statistics.median(xs)
    if len(xs) == 1:
        return med, med, med
    rng = _rng(tag)
    n = len(xs)
    boots = sorted(statistics.median(rng.choices(xs, k=n)) for _ in range(resamples))
    return med, _pct(boots, (1 - level) / 2), _pct(boots, 1 - (1 - level) / 2)


def ratio_ci(num, den, tag="", level=0.95, resamples=RESAMPLES):
    """(median(num)/median(den), low, high): the two sets of runs resampled independently."""
    if not num or not den:
        raise ValueError("no samples")
    point = statistics.median(num) / statistics.median(den)
    rng = _rng(tag)
    boots = sorted(statistics.median(rng.choices(num, k=len(num))) /
                   statistics.median(rng.choices(den, k=len(den))) for _ in range(resamples))
    return point, _pct(boots, (1 - level) / 2), _pct(boots, 1 - (1 - level) / 2)


def _pct(sorted_xs, q):
    """The q-quantile of sorted samples, linear between order statistics."""
    pos = q * (len(sorted_xs) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(sorted_xs) - 1)
    return sorted_xs[lo] + (sorted_xs[hi] - sorted_xs[lo]) * (pos - lo)
