import sys; sys.path.insert(0, "/tmp/cal")
from explore import *
import explore
rows_all = dict(explore.ref)
explore.ref = {k: v for k, v in rows_all.items() if k.startswith("letter-pgbench") or k.startswith("letter-sysbench")}
res = evaluate(lambda w, n, v: {}, {}); ok, ms, lines = report("pg baseline", res); print("\n".join(lines))
for p in (1, 2, 4):
    for cs in (150, 300):
        def hyp(w, n, v, p=p, cs=cs):
            return {"pgbench.tasks": int(p * v), "pgbench.cs_us": cs, "sysbench.tasks": v}
        res = evaluate(hyp, {}); ok, ms, lines = report(f"pg tasks={p}V cs={cs}", res); print("\n".join(lines))
