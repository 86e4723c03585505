#!/bin/bash
# Scenario 10: hostd restarted without a pause.  A 3-vCPU guest follows hostd's hints until its
# sequence is well past 1; then hostd is stopped and started again at once, twice:
#  - while the guest is paused (virsh suspend): the guest cannot see the old connection drop
#    or the new one open, and meets the new hostd's hello and hints on what is, to it, the
#    same stream - the case a hostd restarted within milliseconds makes on a busy host;
#  - plainly (SIGTERM, started again at once): the guest sees its host leave and return; its
#    port stays open and SIGIO tells it the host is back, so every hint the new hostd has had
#    acknowledged took less than one interval (hostd's ack histogram), and the port was not
#    reopened.
# Each time the new hostd's hints must be applied within two intervals of the guest running
# (the new hostd starts again at seq 1: without sessions the guest refused them as stale-seq
# until the new counter passed the old one), and the guest must refuse none as stale-seq.
. "$(dirname "$0")/../lib.sh"
interval_ms=1000
budget_s=$((2 * interval_ms / 1000 + 3)) # two intervals, and TCG's slack
e2e_begin hostd-restart
e2e_guest a 3 "corehint.work=idle"
e2e_wait_all_console "^CH guestd start" 120 a
e2e_start_hostd --interval-ms $interval_ms
e2e_expect "the guest acknowledged hint 15 of the first hostd" \
    e2e_until 90 e2e_status_field a 'd["channel"]["status"]["seq"] >= 15 or exit(1)'

session() { e2e_status | python3 -c 'import json, sys; print(json.load(sys.stdin)["daemon"]["session"])'; }

restart() { # paused|plain
    local how=$1 old new mark t0 took dom
    dom=$(e2e_domname a)
    old=$(session) || e2e_fail "no session in /status"
    mark=$(e2e_console_mark a)
    if [ "$how" = paused ]; then
        virsh -q -c "$E2E_URI" suspend "$dom" >/dev/null || e2e_fail "virsh suspend"
    fi
    kill -TERM "$E2E_HOSTD_PID"
    wait "$E2E_HOSTD_PID" 2>/dev/null
    e2e_start_hostd --interval-ms $interval_ms
    new=$(session) || e2e_fail "no session from the new hostd"
    [ "$new" != "$old" ] || e2e_fail "the restarted hostd kept session $old"
    if [ "$how" = paused ]; then
        # The new hostd's hello and first hints wait in the channel for the paused guest.
        e2e_until 30 e2e_status_field a 'd["channel"]["state"] == "up" and d["channel"]["seq"] >= 2 or exit(1)' ||
            e2e_fail "the new hostd never connected to the paused guest's channel"
        virsh -q -c "$E2E_URI" resume "$dom" >/dev/null || e2e_fail "virsh resume"
    fi
    t0=$(date +%s%N)
    e2e_until $((budget_s * 3)) e2e_status_field a 'd["channel"]["status"]["seq"] >= 1 and d["channel"]["status"]["mode"] == "host" or exit(1)' ||
        e2e_fail "$how restart: no hint of session $new applied within $((budget_s * 3)) s; guest console: $(tail -n +"$mark" "$E2E_DIR/a.log" | grep -E 'refused|session|host' | tail -5 | tr '\n' '|')"
    took=$(( ($(date +%s%N) - t0) / 1000000 ))
    e2e_log "$how restart: session $old -> $new, first hint of the new hostd applied $took ms after the guest ran"
    [ "$took" -le $((budget_s * 1000)) ] ||
        e2e_fail "$how restart: first hint applied after $took ms, more than two intervals (+3 s)"
    if [ "$how" = plain ]; then
        # The guest kept its port open across the absence and heard the new hostd at once
        # (SIGIO): every hint the new hostd had acknowledged by now took less than one interval
        # from being queued to the guest's status (hostd's own histogram; none lost to a reopen).
        local m count within
        m=$(e2e_metrics) || e2e_fail "no /metrics from the new hostd"
        count=$(awk '$1 == "corehint_hint_ack_seconds_count" {print $2}' <<<"$m")
        within=$(awk '$1 == "corehint_hint_ack_seconds_bucket{le=\"1\"}" {print $2}' <<<"$m")
        e2e_log "plain restart: $count hint(s) of the new hostd acknowledged, $within within 1 s"
        [ "${count:-0}" -ge 1 ] && [ "$within" = "$count" ] ||
            e2e_fail "plain restart: of $count acknowledged hints only $within within one interval (1 s)"
        local since
        since=$(tail -n +"$mark" "$E2E_DIR/a.log")
        grep -q "host side closed; waiting for it" <<<"$since" && grep -q "host connected" <<<"$since" ||
            e2e_fail "plain restart: guestd did not keep its port open across the absence: $(grep -E 'port ' <<<"$since" | tail -4 | tr '\n' '|')"
        grep -qE "port [^ ]+ (closed|open)" <<<"$since" &&
            e2e_fail "plain restart: guestd closed or reopened its port: $(grep -E 'port ' <<<"$since" | tail -4 | tr '\n' '|')"
    fi
    if tail -n +"$mark" "$E2E_DIR/a.log" | grep -q "stale-seq"; then
        e2e_fail "$how restart: the guest refused hints as stale-seq: $(tail -n +"$mark" "$E2E_DIR/a.log" | grep -m3 stale-seq | tr '\n' '|')"
    fi
    e2e_wait_console a "session $new" 10 "$mark" >/dev/null ||
        e2e_fail "$how restart: guestd did not log the new session $new"
}

restart paused
e2e_expect "the guest acknowledges the second hostd's hints past 5" \
    e2e_until 60 e2e_status_field a 'd["channel"]["status"]["seq"] >= 5 or exit(1)'
restart plain
e2e_pass
