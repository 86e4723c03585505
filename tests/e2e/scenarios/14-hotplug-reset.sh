#!/bin/bash
# Scenario 14: CPU hotplug in the guest and a reset while hostd hints it, as an operator does
# them.  Two busy 2-vCPU guests share the host and hostd shrinks both to one vCPU.  Then, on
# guest a:
#  - `virsh setvcpus --guest a 1` (qemu-ga takes vCPU 1 offline inside the guest): the
#    guest's hello says 0, a applies a hint of 0 in host mode, and no hint is refused as
#    naming a CPU that is not online once the guest has said so (hostd still counts 2 vCPUs:
#    both threads exist);
#  - `virsh setvcpus --guest a 2` while a's set is narrow: the guest's hello says 0-1 again
#    and its kernel ends up with what hostd decided (the kernel makes a CPU coming online
#    preferred; guestd must put the host's set back);
#  - b destroyed: the contention is gone and a is widened to 0-1;
#  - `virsh reset a` (a reboot without the guest's consent; <on_reboot> restart): a new
#    guestd says hello to the same hostd session and applies its hints in host mode, none
#    refused as stale-seq.
# hostd keeps running and connected to libvirt throughout.
#
# Not here: `virsh setvcpus --live` (vCPU threads plugged and unplugged).  Measured on this
# kind of host (TCG, qemu 7.2, libvirt 9.0, machine pc): a guest kernel off a known
# hypervisor ignores the MADT's disabled CPUs, so no CPU absent at boot can be plugged; and
# the unplug of one present at boot takes the guest longer than libvirt's 5 s wait, after
# which libvirt still counts the vCPU qemu has removed.
. "$(dirname "$0")/../lib.sh"
interval_ms=1000
budget_s=$((4 * interval_ms / 1000 + 10)) # a few intervals, and TCG's slack
e2e_begin hotplug-reset
E2E_ON_REBOOT=restart e2e_guest a 2 "corehint.work=busy"
e2e_guest b 2 "corehint.work=busy"
e2e_wait_all_console "^CH work busy" 120 a b
e2e_until 60 e2e_guest_exec a "true" || e2e_fail "qemu-ga does not answer in guest a"
e2e_start_hostd --interval-ms $interval_ms
for g in a b; do
    e2e_until 90 e2e_status_field "$g" 'd["channel"]["status"]["mode"] == "host" and d["channel"]["status"]["applied"] in ("0", "1") or exit(1)' ||
        e2e_fail "guest $g: not shrunk to one vCPU in host mode: $(e2e_status_field "$g" 'd["channel"]')"
done
e2e_log "ok: both guests in host mode, one vCPU each"
dom=$(e2e_domname a)
session=$(e2e_status | python3 -c 'import json, sys; print(json.load(sys.stdin)["daemon"]["session"])')
field() { e2e_status_field a "$1"; }

alive() {
    kill -0 "$E2E_HOSTD_PID" 2>/dev/null || e2e_fail "hostd died ($1)"
    e2e_status | python3 -c 'import json, sys; d = json.load(sys.stdin)["daemon"]; sys.exit(d.get("libvirt") != "connected")' ||
        e2e_fail "hostd is not connected to libvirt after $1"
}

# kernel_has_decision: the guest's kernel prefers what hostd decided (what the guest has
# online of it), and the guest has acknowledged the latest hint in host mode.
kernel_has_decision() {
    local want
    want=$(field 'd["channel"]["status"]["applied"] if d["channel"]["status"]["seq"] == d["channel"]["seq"] and d["channel"]["status"]["mode"] == "host" else exit(1)') ||
        return 1
    [ "$(e2e_preferred a)" = "$want" ]
}

# guest_vcpus N ONLINE: qemu-ga sets N vCPUs online in a; the guest reports ONLINE.
guest_vcpus() {
    local mark t0
    mark=$(e2e_console_mark a)
    t0=$SECONDS
    virsh -q -c "$E2E_URI" setvcpus "$dom" "$1" --guest >/dev/null || e2e_fail "virsh setvcpus $1 --guest"
    e2e_wait_console a "^CH online=$2 " 60 "$mark" >/dev/null ||
        e2e_fail "setvcpus --guest $1: the guest never reported online=$2"
    e2e_log "setvcpus --guest $1: the guest has $2 online $((SECONDS - t0)) s after the command"
}

# --- one vCPU offline inside the guest
guest_vcpus 1 0
e2e_expect "a's helper says hello with only 0 online" \
    e2e_until "$budget_s" e2e_status_field a 'd["channel"]["hello"]["online"] == "0" or exit(1)'
e2e_expect "a applies a hint of 0 in host mode" \
    e2e_until "$budget_s" e2e_status_field a 'd["channel"]["status"]["applied"] == "0" and d["channel"]["status"]["mode"] == "host" and d["channel"]["status"]["seq"] == d["channel"]["seq"] or exit(1)'
e2e_expect "a's kernel prefers 0" e2e_until 10 e2e_preferred_is a 0
# A refusal while the change is in flight (hostd learns of it from the guest's hello) is
# allowed; none once the guest has said so.
seq_hello=$(field 'd["channel"]["seq"]')
e2e_expect "hostd makes four more decisions" e2e_wait_decisions 4 "$budget_s"
field "d['channel'].get('last_error') is None or d['channel']['last_error']['seq'] <= $seq_hello or exit(1)" >/dev/null ||
    e2e_fail "a refused a hint after saying it has only 0 online: $(field 'd["channel"]["last_error"]')"
e2e_expect "hostd still counts 2 vCPU threads" e2e_status_field a 'd["vcpus"] == 2 or exit(1)'
alive "setvcpus --guest 1"

# --- back online while the set is narrow
guest_vcpus 2 0-1
e2e_expect "a's helper says hello with 0-1 online" \
    e2e_until "$budget_s" e2e_status_field a 'd["channel"]["hello"]["online"] == "0-1" or exit(1)'
e2e_expect "a's kernel prefers what hostd decided, not the CPU that came online" \
    e2e_until "$budget_s" kernel_has_decision
e2e_log "a: decision $(field 'd["decision"]["preferred"]'), applied $(field 'd["channel"]["status"]["applied"]'), kernel $(e2e_preferred a)"
alive "setvcpus --guest 2"

# --- no contention: a widened
e2e_destroy b
e2e_expect "a widened to 0-1 once b is gone" \
    e2e_until $((budget_s + 20)) e2e_status_field a 'd["channel"]["status"]["applied"] == "0-1" and d["channel"]["status"]["seq"] == d["channel"]["seq"] or exit(1)'
e2e_expect "a's kernel prefers 0-1" e2e_until 10 e2e_preferred_is a 0-1

# --- reset: a new boot, a new guestd, the same hostd session
mark=$(e2e_console_mark a)
seq=$(field 'd["channel"]["seq"]')
virsh -q -c "$E2E_URI" reset "$dom" >/dev/null || e2e_fail "virsh reset"
e2e_log "reset a"
e2e_wait_console a "^CH boot " 120 "$mark" >/dev/null || e2e_fail "a did not boot again after the reset"
e2e_wait_console a "^CH guestd start" 60 "$mark" >/dev/null || e2e_fail "no guestd after the reset"
e2e_expect "a's new helper applies a hint in host mode" \
    e2e_until "$budget_s" e2e_status_field a "d['channel']['status']['seq'] > $seq and d['channel']['status']['mode'] == 'host' and d['channel']['status']['seq'] == d['channel']['seq'] or exit(1)"
if tail -n +"$mark" "$E2E_DIR/a.log" | grep -q "stale-seq"; then
    e2e_fail "reset: the guest refused hints as stale-seq"
fi
e2e_expect "the same hostd session after the reset" \
    e2e_status_field a "doc['daemon']['session'] == '$session' or exit(1)"
e2e_log "a after the reset: $(field 'd["channel"]["status"]'), its kernel's preferred sets since: $(e2e_preferred_sets a "$mark" | tr '\n' ' ')"
alive "reset"
e2e_pass
