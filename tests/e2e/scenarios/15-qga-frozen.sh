#!/bin/bash
# Scenario 15: a guest's qemu-ga hangs.  Guest q is hinted through qemu-ga (actuator =
# agent-sysfs) and its agent is stopped (SIGSTOP inside the guest) before hostd starts; guest b
# runs corehint-guestd.  Every qemu-ga command for q then waits for libvirt's timeout.  hostd
# must go on sampling and deciding every interval as if q's agent were not there (its commands
# run beside the samples, not before them), keep hinting b, back off from q's agent, and apply
# q's set once the agent runs again (SIGCONT, timed inside the guest).
. "$(dirname "$0")/../lib.sh"
interval_ms=1000
frozen_s=45
e2e_begin qga-frozen
e2e_guest q 2 "corehint.role=none corehint.work=busy"
e2e_guest b 2 "corehint.work=busy"
e2e_wait_all_console "^CH work busy" 120 q b
e2e_until 60 e2e_guest_exec q "true" || e2e_fail "qemu-ga does not answer in guest q"
dom=$(e2e_domname q)
# The stop and the continue run in one detached child of qemu-ga, which has answered the
# guest-exec by the time the child stops it.
e2e_guest_exec q "sleep 1; p=\$(cat /run/qemu-ga.pid); kill -STOP \$p; echo CH qga-stopped >/dev/console; sleep $frozen_s; kill -CONT \$p; echo CH qga-continued >/dev/console" ||
    e2e_fail "cannot reach qemu-ga in q"
e2e_wait_console q "^CH qga-stopped" 30 >/dev/null || e2e_fail "q's qemu-ga was not stopped"
t_frozen=$SECONDS
e2e_expect "q's qemu-ga no longer answers" \
    bash -c "! timeout 10 virsh -q -c '$E2E_URI' qemu-agent-command --timeout 2 '$dom' '{\"execute\":\"guest-ping\"}'"
cat >"$E2E_DIR/hostd.conf" <<EOC
interval_ms = $interval_ms
[domain $dom]
actuator = agent-sysfs
EOC
e2e_start_hostd -c "$E2E_DIR/hostd.conf"
metric() { e2e_metrics | awk -v m="$1" '$1 == m {print $2}'; }
e2e_expect "b is hinted and applies in host mode" \
    e2e_until 60 e2e_status_field b 'd["channel"]["status"]["mode"] == "host" and d["channel"]["status"]["seq"] == d["channel"]["seq"] or exit(1)'
e2e_expect "hostd tried q's agent and failed" \
    e2e_until 60 e2e_status_field q 'd["agent"]["failed"] >= 1 or exit(1)'

# While q's agent is stopped: decisions at the interval's pace, b's hints acknowledged.  b's
# hints and the decisions come from one /status, so they count the same stretch of hostd's life.
counts() { e2e_status_field b '"%d %d" % (d["channel"]["hints"], doc["daemon"]["decisions"])'; }
x=$(counts) || e2e_fail "no counts for b"
read -r h0 d0 <<<"$x"
t0=$SECONDS
left=$((frozen_s - (SECONDS - t_frozen) - 5))
[ "$left" -ge 15 ] || e2e_fail "too little of the freeze left to measure ($left s)"
sleep "$left"
x=$(counts) || e2e_fail "no counts for b"
read -r h1 d1 <<<"$x"
secs=$((SECONDS - t0))
fails=$(e2e_status_field q 'd["agent"]["failed"]')
backoff=$(e2e_status_field q 'd["agent"].get("backoff_intervals", 0)')
e2e_log "q's agent stopped: $((d1 - d0)) decisions and $((h1 - h0)) hints to b in $secs s; $fails failed qemu-ga commands for q, backoff now $backoff intervals"
e2e_log "sample time $(metric corehint_sample_seconds) s, hint ack p99 $(e2e_status | python3 -c 'import json, sys; print(json.load(sys.stdin)["daemon"]["hint_ack_p99_ns"] / 1e6)') ms"
e2e_expect "a decision every interval while q's agent hangs (>= $((secs * 8 / 10)) in $secs s)" \
    test $((d1 - d0)) -ge $((secs * 8 / 10))
e2e_expect "b got a hint with every decision ($((h1 - h0)) in $((d1 - d0)))" \
    test $((h1 - h0)) -ge $((d1 - d0 - 1))
e2e_expect "b keeps acknowledging them (the latest within 3 s)" \
    e2e_until 3 e2e_status_field b 'd["channel"]["status"]["seq"] == d["channel"]["seq"] or exit(1)'
# Each failed command takes libvirt's 5 s guest-sync, so counting them cannot tell a backoff
# from none: the backoff itself must have grown (1, 2, 4, 8 ... after as many failures; about
# 4 failures fit in the window).
e2e_expect "hostd backs off from q's agent (backoff $backoff >= 4 intervals after $fails failures)" \
    test "$backoff" -ge 4

# The agent runs again: q's set is applied within the backoff (at most 64 intervals).
e2e_wait_console q "^CH qga-continued" 30 >/dev/null || e2e_fail "q's qemu-ga was not continued"
e2e_expect "q's agent applies the set once it runs again" \
    e2e_until 90 e2e_status_field q 'd["agent"]["ok"] >= 1 and "retry_in_intervals" not in d["agent"] or exit(1)'
want=$(e2e_status_field q 'd["agent"]["applied"]')
e2e_expect "q's kernel prefers $want" e2e_until 30 e2e_preferred_is q "$want"
kill -0 "$E2E_HOSTD_PID" 2>/dev/null || e2e_fail "hostd died"
e2e_pass
