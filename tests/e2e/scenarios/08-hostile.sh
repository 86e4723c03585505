#!/bin/bash
# Scenario 8: a hostile guest floods its port with garbage and over-long lines.  The other guest
# still gets a hint every interval, hostd counts the hostile guest's malformed and oversized
# lines, and its CPU time stays bounded (the per-guest input budget) over E2E_HOSTILE_SECS
# (10; scripts/bench: 60) of flood.
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
# seq runs per hostd session, over every guest: count the good guest's own hints
# utime + stime of hostd, in clock ticks
cpu_ticks() { awk '{print $14 + $15}' "/proc/$E2E_HOSTD_PID/stat"; }
s0=$(e2e_status_field good 'd["channel"]["hints"]')
c0=$(cpu_ticks) t0=$(date +%s%N)
sleep "${E2E_HOSTILE_SECS:-10}"
c1=$(cpu_ticks) t1=$(date +%s%N)
s1=$(e2e_status_field good 'd["channel"]["hints"]')
secs=$(((t1 - t0 + 500000000) / 1000000000))
# percent of one CPU: ticks / CLK_TCK over the wall time
cpu_pct=$(((c1 - c0) * 100 * 1000000000 / $(getconf CLK_TCK) / (t1 - t0)))
e2e_log "hostd used $cpu_pct % of one CPU over $secs s of flood (budgeted input)"
e2e_log "good guest sent hints $s0 -> $s1 in $secs s; hostile: $(e2e_status_field evil 'd["channel"]["malformed"], d["channel"]["oversized"]') malformed, oversized"
e2e_expect "the good guest got a hint every interval (at least $((secs - 2)) in $secs s)" test $((s1 - s0)) -ge $((secs - 2))
e2e_expect "the good guest keeps acknowledging them (the latest within 3 s)" \
    e2e_until 3 e2e_status_field good 'd["channel"]["status"]["seq"] == d["channel"]["seq"] or exit(1)'
e2e_expect "hostd's CPU bounded under the flood ($cpu_pct % < 50 % of one CPU)" test "$cpu_pct" -lt 50
e2e_expect "/metrics exports the drops" bash -c "curl -sf http://127.0.0.1:$E2E_HOSTD_HTTP/metrics | grep -E '^corehint_.*(malformed|oversized|dropped)' | grep -vq ' 0\$'"
e2e_pass
