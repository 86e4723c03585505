#!/bin/bash
# Scenario 8: a hostile guest floods its port with garbage and over-long lines.  The other guest
# still gets a hint with every decision, hostd counts the hostile guest's malformed and oversized
# lines, and its CPU time stays bounded by the per-guest input budget (which must have held the
# hostile guest back) over E2E_HOSTILE_SECS (10; scripts/bench: 60) decisions of flood.
. "$(dirname "$0")/../lib.sh"
e2e_begin hostile
e2e_guest evil 2 "corehint.role=hostile"
e2e_guest good 2 "corehint.work=idle"
e2e_wait_all_console "^CH guestd start" 120 good
e2e_start_hostd --interval-ms 1000
e2e_expect "the good guest acknowledges hints" \
    e2e_until 60 e2e_status_field good 'd["channel"]["hints"] >= 2 and d["channel"]["status"]["seq"] == d["channel"]["seq"] or exit(1)'
e2e_expect "hostd counts the hostile guest's garbage" \
    e2e_until 60 e2e_status_field evil 'd["channel"]["malformed"] > 0 and d["channel"]["oversized"] > 0 or exit(1)'
# Counted in hostd's decisions, not seconds (this machine is shared, the guests may run under
# TCG): seq runs per hostd session, over every guest, so count the good guest's own hints, read
# with the decisions from one /status.
# utime + stime of hostd, in clock ticks
cpu_ticks() { awk '{print $14 + $15}' "/proc/$E2E_HOSTD_PID/stat"; }
counts() { e2e_status_field good '"%d %d" % (d["channel"]["hints"], doc["daemon"]["decisions"])'; }
throttled() { e2e_status_field evil 'd["channel"]["throttled"]'; }
decided() { [ "$(e2e_status | python3 -c 'import json, sys; print(json.load(sys.stdin)["daemon"]["decisions"])')" -ge "$1" ]; }
n=${E2E_HOSTILE_SECS:-10}
x=$(counts) || e2e_fail "no counts for the good guest"
read -r s0 d0 <<<"$x"
r0=$(throttled)
c0=$(cpu_ticks) t0=$(date +%s%N)
# a generous deadline: a loop starved by the flood never gets there
e2e_expect "hostd makes $n decisions under the flood" e2e_until $((n * 3 + 60)) decided $((d0 + n))
c1=$(cpu_ticks) t1=$(date +%s%N)
x=$(counts) || e2e_fail "no counts for the good guest"
read -r s1 d1 <<<"$x"
r1=$(throttled)
secs=$(((t1 - t0 + 500000000) / 1000000000))
# percent of one CPU: ticks / CLK_TCK over the wall time
cpu_pct=$(((c1 - c0) * 100 * 1000000000 / $(getconf CLK_TCK) / (t1 - t0)))
e2e_log "hostd used $cpu_pct % of one CPU over $secs s of flood; the hostile guest's input throttled $r0 -> $r1 times"
e2e_log "good guest sent hints $s0 -> $s1 in decisions $d0 -> $d1; hostile: $(e2e_status_field evil 'd["channel"]["malformed"], d["channel"]["oversized"]') malformed, oversized"
e2e_expect "the input budget held the hostile guest back (throttled $r0 -> $r1)" test "$r1" -gt "$r0"
e2e_expect "the good guest got a hint with every decision ($((s1 - s0)) in $((d1 - d0)))" \
    test $((s1 - s0)) -ge $((d1 - d0 - 1))
e2e_expect "the good guest keeps acknowledging them (the latest within 3 s)" \
    e2e_until 3 e2e_status_field good 'd["channel"]["status"]["seq"] == d["channel"]["seq"] or exit(1)'
e2e_expect "hostd's CPU bounded under the flood ($cpu_pct % < 50 % of one CPU)" test "$cpu_pct" -lt 50
e2e_expect "/metrics exports the drops" bash -c "curl -sf http://127.0.0.1:$E2E_HOSTD_HTTP/metrics | grep -E '^corehint_.*(malformed|oversized|dropped)' | grep -vq ' 0\$'"
e2e_pass
