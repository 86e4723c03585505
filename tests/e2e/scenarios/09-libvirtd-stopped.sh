#!/bin/bash
# Scenario 9: libvirtd stops answering (SIGSTOP) for more than three lease lengths, under two
# busy guests hostd has shrunk (vCPU n of both pinned to host CPU n).  hostd's event loop does
# not wait for libvirt: no guest's lease expires (no fallback), /metrics answers throughout,
# and once its decision is older than stale_intervals (6 intervals) hostd widens both guests
# to all their vCPUs; after SIGCONT it decides again and shrinks them.
. "$(dirname "$0")/../lib.sh"
interval_ms=1000
lease_intervals=3
stop_s=12 # > 3 leases of 3 s, < libvirt's keepalive (5 s x 3 missed) + a sample
e2e_begin libvirtd-stopped
[ "$(nproc)" -ge 2 ] || e2e_fail "needs 2 host CPUs"
e2e_guest a 2 "corehint.work=busy"
e2e_guest b 2 "corehint.work=busy"
e2e_wait_all_console "^CH work busy" 120 a b
for g in a b; do e2e_pin "$g" 2 n; done # (booted floating: e2e_pin)
e2e_start_hostd --interval-ms $interval_ms
for g in a b; do
    e2e_until 90 e2e_status_field "$g" \
        'd["decision"]["count"] < 2 and d["channel"]["acked"] and d["channel"]["status"]["applied"] == d["decision"]["preferred"] or exit(1)' ||
        e2e_fail "guest $g: hostd never shrank it, or it never acknowledged"
done
# A censored guest may grow for an interval: stop libvirtd at a moment both are shrunk (one
# /status document), so that the widening has something to show.
both_shrunk() {
    e2e_status | python3 -c '
import json, sys
got = {d["name"]: d for d in json.load(sys.stdin).get("domains", [])}
ok = all(got[n]["decision"]["count"] < 2 and got[n]["channel"]["status"]["applied"] == got[n]["decision"]["preferred"]
         for n in sys.argv[1:])
sys.exit(0 if ok else 1)' "$(e2e_domname a)" "$(e2e_domname b)"
}
e2e_until 60 both_shrunk || e2e_fail "the guests were never both shrunk and applied at once"
mark_a=$(e2e_console_mark a)
mark_b=$(e2e_console_mark b)
mark_h=$(wc -l <"$E2E_DIR/hostd.log")

export E2E_ON_EXIT='libvirt_env_signal_libvirtd CONT'
libvirt_env_signal_libvirtd STOP || e2e_fail "cannot stop libvirtd (this test stops only a libvirtd it started)"
t0=$SECONDS
e2e_log "libvirtd stopped for $stop_s s"
answered=0 failed=0 slowest_ms=0 stale_seen=0
: >"$E2E_DIR/widened-acked"
while [ $((SECONDS - t0)) -lt $stop_s ]; do
    s=$(date +%s%N)
    if e2e_metrics >"$E2E_DIR/metrics-stopped.txt"; then
        answered=$((answered + 1))
        grep -qx 'corehint_stale 1' "$E2E_DIR/metrics-stopped.txt" && stale_seen=1
    else
        failed=$((failed + 1))
    fi
    ms=$((($(date +%s%N) - s) / 1000000))
    [ $ms -le $slowest_ms ] || slowest_ms=$ms
    # The guests' own reports (guestd's status after applying a hint, relayed by /status):
    # the widened set lasts only until hostd decides again, a few seconds, and the console
    # reporter of a starved guest can miss all of it (CI: guest b printed nothing for 43 s
    # while hostd saw it run).  Kept now, read after the window: a python per sample here
    # took enough of the 2 host CPUs to starve the pinned guests' helpers past their lease.
    e2e_status >"$E2E_DIR/status-stopped-$answered-$failed.json" 2>/dev/null || true
    sleep 0.5
done
libvirt_env_signal_libvirtd CONT || e2e_fail "cannot continue libvirtd"
export E2E_ON_EXIT=
python3 - "$E2E_DIR" "$(e2e_domname a)" "$(e2e_domname b)" >"$E2E_DIR/widened-acked" <<'PY'
import glob, json, os, sys
d, names = sys.argv[1], {sys.argv[2]: "a", sys.argv[3]: "b"}
seen = set()
for f in glob.glob(os.path.join(d, "status-stopped-*.json")):
    try:
        doc = json.load(open(f))
    except ValueError:
        continue
    for dom in doc.get("domains", []):
        st = dom.get("channel", {}).get("status", {})
        if dom.get("name") in names and st.get("applied") == "0-1":
            seen.add(names[dom["name"]])
print("\n".join(sorted(seen)))
PY
e2e_log "libvirtd continued; /metrics answered $answered times ($failed failures, slowest $slowest_ms ms)"

e2e_expect "/metrics answered every request while libvirtd was stopped" test "$failed" -eq 0
e2e_expect "/metrics said corehint_stale 1 once the decision aged" test "$stale_seen" -eq 1
e2e_expect "hostd logged the widening" \
    sh -c 'tail -n +"$1" "$2" | grep -q "widening every guest to all its vCPUs"' sh "$((mark_h + 1))" "$E2E_DIR/hostd.log"
for g in a b; do
    log=$E2E_DIR/$g.log
    mark=$mark_a
    [ "$g" = b ] && mark=$mark_b
    # hints kept renewing the lease: the guest never fell back while libvirtd was stopped
    if tail -n +"$((mark + 1))" "$log" | grep -q "lease of hint seq [0-9]* expired"; then
        e2e_fail "guest $g: a lease expired while libvirtd was stopped (hints stopped)"
    fi
    e2e_log "ok: guest $g: no lease expired"
    if grep -qx "$g" "$E2E_DIR/widened-acked"; then
        e2e_log "ok: guest $g was widened to all its vCPUs (its guestd reported applying 0-1)"
        continue
    fi
    # (the guest's console reporter may print it a moment after the hint was applied; a
    # guest whose last set before the stop was already all of them has nothing to show)
    last=$(head -n "$mark" "$log" | tr -d '\r' | grep -E '^CH preferred=' | tail -n 1 |
        sed -E 's/^CH preferred=([^ ]*).*/\1/')
    if [ "$last" = 0-1 ]; then
        e2e_log "guest $g already had 0-1 when libvirtd stopped"
        continue
    fi
    # 30 s: a guest whose vCPUs are pinned alike can be starved by this host's scheduler for
    # tens of seconds (seen in CI: not one console line from guest a for 40 s)
    e2e_until 30 sh -c 'tail -n +"$1" "$2" | tr -d "\r" | grep -qE "^CH preferred=0-1( |\$)"' sh "$((mark + 1))" "$log" ||
        e2e_fail "guest $g was not widened to all its vCPUs: console $(e2e_preferred_sets "$g" "$((mark + 1))" | tr '\n' ' '), channel now $(e2e_status_field "$g" 'd["channel"]' 2>&1)"
    e2e_log "ok: guest $g was widened to all its vCPUs"
done
# Deciding again: a fresh decision (not stale), and both guests shrunk again.
e2e_expect "hostd decides again after SIGCONT" \
    e2e_until 30 sh -c 'curl -sf --max-time 5 "http://127.0.0.1:$1/status" | python3 -c "
import json, sys
d = json.load(sys.stdin)[\"daemon\"]
sys.exit(0 if not d[\"stale\"] and d[\"libvirt\"] == \"connected\" and d[\"stale_episodes\"] >= 1 else 1)"' sh "$E2E_HOSTD_HTTP"
for g in a b; do
    e2e_expect "guest $g shrunk again" e2e_until 60 e2e_status_field "$g" 'd["decision"]["count"] < 2 or exit(1)'
done
e2e_log "lease ${lease_intervals} intervals; widening came $(grep -m1 -n 'widening every guest' "$E2E_DIR/hostd.log" | cut -d: -f2- | cut -c1-23) (log time)"
e2e_pass
