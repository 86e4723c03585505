#!/bin/bash
# Scenario 4: corehint-guestd is killed (SIGKILL, no chance to restore anything) in a guest that
# hostd has shrunk.  The guest's init restarts it; meanwhile hostd reports the guest as not
# acknowledging; the new helper re-applies hostd's decision, so the guest is never left shrunk
# without a live decider for longer than the restart.
. "$(dirname "$0")/../lib.sh"
e2e_begin guestd-killed
# floating vCPUs, as in 03-hostd-stop: the helper's restart is tested, not placement
e2e_guest a 2 "corehint.work=busy corehint.respawn=6"
e2e_guest b 2 "corehint.work=busy"
e2e_wait_all_console "^CH work busy" 120 a b
e2e_start_hostd --interval-ms 1000
e2e_expect "guest a shrunk to one vCPU by hostd" \
    e2e_until 60 e2e_status_field a 'd["channel"]["status"]["applied"] in ("0", "1") or exit(1)'
e2e_until 30 e2e_guest_exec a "true" || e2e_fail "qemu-ga does not answer in guest a"
mark=$(e2e_console_mark a)
e2e_guest_exec a 'kill -9 $(pidof corehint-guestd)' || e2e_fail "guest-exec kill failed"
e2e_wait_console a "^CH guestd exit rc=137" 15 "$mark" >/dev/null || e2e_fail "guestd in a was not killed"
t0=$SECONDS
e2e_log "guestd killed in a"
e2e_expect "hostd reports guest a as silent while its helper is dead" \
    e2e_until 6 e2e_status_field a 'd["channel"]["silent"] or exit(1)'
e2e_wait_console a "^CH guestd start" 15 "$((mark + 1))" >/dev/null || e2e_fail "init did not restart guestd"
e2e_expect "the new helper re-applies hostd's decision and acknowledges it" \
    e2e_until 30 e2e_status_field a 'not d["channel"]["silent"] and d["channel"]["status"]["applied"] == d["decision"]["preferred"] or exit(1)'
e2e_log "ok: guest a under a live decider again $((SECONDS - t0)) s after the kill"
# The console reporter is a 0.2 s shell loop in a busy guest, and hostd may move on meanwhile
# (a dip in demand makes the pool uncontended): wait for the kernel to show hostd's decision.
kernel_follows() { [ "$(e2e_preferred a)" = "$(e2e_status_field a 'd["decision"]["preferred"]')" ]; }
e2e_expect "guest a's kernel prefers hostd's set" e2e_until 15 kernel_follows
e2e_pass
