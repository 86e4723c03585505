#!/bin/bash
# Scenario 8: a hostile guest floods its port with garbage and over-long lines.  The other guest
# still gets a hint every interval, and hostd counts the hostile guest's malformed and
# oversized lines.
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
s0=$(e2e_status_field good 'd["channel"]["hints"]')
t0=$SECONDS
sleep 10
s1=$(e2e_status_field good 'd["channel"]["hints"]')
secs=$((SECONDS - t0))
e2e_log "good guest sent hints $s0 -> $s1 in $secs s; hostile: $(e2e_status_field evil 'd["channel"]["malformed"], d["channel"]["oversized"]') malformed, oversized"
e2e_expect "the good guest got a hint every interval (at least $((secs - 2)) in $secs s)" test $((s1 - s0)) -ge $((secs - 2))
e2e_expect "the good guest keeps acknowledging them (the latest within 3 s)" \
    e2e_until 3 e2e_status_field good 'd["channel"]["status"]["seq"] == d["channel"]["seq"] or exit(1)'
e2e_expect "/metrics exports the drops" bash -c "curl -sf http://127.0.0.1:$E2E_HOSTD_HTTP/metrics | grep -E '^corehint_.*(malformed|oversized|dropped)' | grep -vq ' 0\$'"
e2e_pass
