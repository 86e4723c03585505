"""Statistics of the benchmark reports: one sample per run, medians and ratios with intervals.

A run is one execution of the workload in every guest of a scenario at once, in one mode.  Its
guests share the host and each other's contention, so they are not independent samples; the
run's sample is the mean of its guests' wall times (the time a unit of work took on this host,
averaged over the guests that shared it).  A run in which a guest hit the timeout has a sample
that is a lower bound.

A median's interval is the distribution-free one (order statistics, binomial coverage): at
n = 10 runs it is [x(2), x(9)] (97.9 %); below 6 runs no 95 % interval exists and none is
printed.  A ratio of medians has a percentile bootstrap interval over runs (each mode's runs
resampled with replacement, a fixed seed so that a report is reproducible from its raw
samples), also only from 6 runs on each side.
"""
import math
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


def median_ci(xs, level=0.95):
    """(median, low, high) of xs.  The interval is the distribution-free one of a median: the
    order statistics x(j) and x(n+1-j) with the largest j whose coverage, from the binomial
    distribution of the samples below the median, is still >= level.  None for low and high
    when no such j exists (n < 6 at 95 %): a bootstrap would print [min, max] there, which
    covers the median only 75 % of the time at n = 3."""
    if not xs:
        raise ValueError("no samples")
    med = statistics.median(xs)
    n = len(xs)
    ys = sorted(xs)
    best = None
    for j in range(1, n // 2 + 1):
        # P(x(j) <= median <= x(n+1-j)) = 1 - 2 P(Binomial(n, 1/2) <= j - 1)
        tail = sum(math.comb(n, i) for i in range(j)) / 2 ** n
        if 1 - 2 * tail >= level:
            best = j
    if best is None:
        return med, None, None
    return med, ys[best - 1], ys[n - best]


def median_bound(runs_):
    """runs_: [(sample, is_lower_bound)].  True when the median is a lower bound: it changes
    once every bounded sample is taken as unbounded (+inf)."""
    xs = [x for x, _ in runs_]
    ys = [math.inf if b else x for x, b in runs_]
    return statistics.median(ys) != statistics.median(xs)


def ratio_ci(num, den, tag="", level=0.95, resamples=RESAMPLES):
    """(median(num)/median(den), low, high): a percentile bootstrap, the two sets of runs
    resampled independently.  None for low and high with fewer than 6 runs on a side (see
    median_ci)."""
    if not num or not den:
        raise ValueError("no samples")
    point = statistics.median(num) / statistics.median(den)
    if min(len(num), len(den)) < 6:
        return point, None, None
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
