import sys; sys.path.insert(0, "/tmp/cal")
from explore import *
import explore
rows_all = dict(explore.ref)
def sub(prefix):
    explore.ref = {k: v for k, v in rows_all.items() if k.startswith(prefix)}
def r10(x): return max(10, int(round(x / 10.0)) * 10)
sub("letter-hackbench")
res = evaluate(lambda w, n, v: {}, {}); ok, ms, lines = report("hb baseline", res); print("\n".join(lines))
for k in (1.25, 2.5, 5):
    for lm in ("1", "group", "pipe"):
        def hyp(w, n, v, k=k, lm=lm):
            t = r10(k * v)
            locks = {"1": 1, "group": t // 10, "pipe": t}[lm]
            return {"hackbench.tasks": t, "hackbench.locks": locks}
        res = evaluate(hyp, {}); ok, ms, lines = report(f"hb tasks={k}V locks={lm}", res); print("\n".join(lines))
