#!/bin/bash
# Scenario 12: what an operator does to a guest while hostd hints it.  Two busy 2-vCPU guests
# share the host and hostd shrinks both to one vCPU; then, on guest a:
#  - virsh save + virsh restore: a new qemu process, a new channel socket behind the same
#    path and vCPU counters that start again from zero.  hostd must connect to the new
#    channel, and a must apply hints of the same hostd session again, in host mode, within
#    a few intervals of running, refusing none as stale-seq (the guest kept its seq
#    watermark; a new channel that counted seq from 1 again was refused for as many hints
#    as the old one had sent);
#  - virsh suspend for three leases, then virsh resume: while a is paused hostd sees it use
#    nothing; once resumed a applies a fresh hint in host mode within a few intervals.
# hostd must keep running and connected to libvirt throughout.
. "$(dirname "$0")/../lib.sh"
interval_ms=1000
lease_s=$((3 * interval_ms / 1000))
budget_s=$((4 * interval_ms / 1000 + 5)) # a few intervals, and TCG's slack
e2e_begin lifecycle
e2e_guest a 2 "corehint.work=busy"
e2e_guest b 2 "corehint.work=busy"
e2e_wait_all_console "^CH work busy" 120 a b
e2e_start_hostd --interval-ms $interval_ms
for g in a b; do
    e2e_until 60 e2e_status_field "$g" 'd["guest_mode"] == "host" and d["channel"]["status"]["applied"] in ("0", "1") or exit(1)' ||
        e2e_fail "guest $g: not shrunk to one vCPU in host mode"
done
e2e_log "ok: both guests in host mode, one vCPU each"
dom=$(e2e_domname a)
session=$(e2e_status | python3 -c 'import json, sys; print(json.load(sys.stdin)["daemon"]["session"])')

field() { e2e_status_field a "$1"; }

# a applies a hint sent after SEQ, in host mode, within the budget; prints the time it took
applies_after() { # what seq
    local what=$1 seq=$2 t0 took
    t0=$(date +%s%N)
    e2e_until "$budget_s" e2e_status_field a "d['channel']['status']['seq'] > $seq and d['channel']['status']['mode'] == 'host' and d['channel']['state'] == 'up' or exit(1)" ||
        e2e_fail "$what: guest a applied no hint after seq $seq in host mode within $budget_s s: $(field 'd["channel"]')"
    took=$(( ($(date +%s%N) - t0) / 1000000 ))
    e2e_log "ok: $what: a applied a hint in host mode $took ms after it ran again"
}

alive() {
    kill -0 "$E2E_HOSTD_PID" 2>/dev/null || e2e_fail "hostd died ($1)"
    e2e_status | python3 -c 'import json, sys; d = json.load(sys.stdin)["daemon"]; sys.exit(d.get("libvirt") != "connected")' ||
        e2e_fail "hostd is not connected to libvirt after $1"
}

# --- save and restore
seq=$(field 'd["channel"]["seq"]')
mark=$(e2e_console_mark a)
t0=$SECONDS
virsh -q -c "$E2E_URI" save "$dom" "$E2E_DIR/a.save" >/dev/null || e2e_fail "virsh save"
e2e_log "saved a in $((SECONDS - t0)) s"
t0=$SECONDS
virsh -q -c "$E2E_URI" restore "$E2E_DIR/a.save" >/dev/null || e2e_fail "virsh restore"
e2e_log "restored a in $((SECONDS - t0)) s"
# the restored qemu opens the console log anew (truncating it): then all of it is new
[ "$(e2e_console_mark a)" -ge "$mark" ] || mark=1
applies_after "save + restore" "$seq"
if tail -n +"$mark" "$E2E_DIR/a.log" | grep -q "stale-seq"; then
    e2e_fail "save + restore: the guest refused hints as stale-seq: $(tail -n +"$mark" "$E2E_DIR/a.log" | grep -m3 stale-seq | tr '\n' '|')"
fi
e2e_expect "the same hostd session after the restore" \
    e2e_status_field a "doc['daemon']['session'] == '$session' or exit(1)"
alive "save + restore"

# --- suspend for three leases, then resume
virsh -q -c "$E2E_URI" suspend "$dom" >/dev/null || e2e_fail "virsh suspend"
e2e_log "suspended a"
e2e_expect "hostd sees the paused guest use no CPU" \
    e2e_until $((3 * interval_ms / 1000 + 5)) e2e_status_field a 'd["demand"] < 0.05 or exit(1)'
sleep $((3 * lease_s))
alive "three leases of a paused guest"
seq=$(field 'd["channel"]["seq"]')
virsh -q -c "$E2E_URI" resume "$dom" >/dev/null || e2e_fail "virsh resume"
applies_after "suspend + resume" "$seq"
alive "suspend + resume"
e2e_expect "guest b kept applying hints in host mode" \
    e2e_status_field b 'd["channel"]["status"]["mode"] == "host" and d["channel"]["state"] == "up" or exit(1)'
e2e_pass
