#!/bin/bash
# Scenario 5: libvirtd restarts under a running, unprivileged hostd.  hostd starts as root and
# switches to user nobody with the one group it needs, libvirt-qemu (qemu's channel socket):
# without enforce = cap or a qemu-ga actuator it opens libvirt read-only, which any local user
# may (tests/lib/libvirt-env).  It reconnects as nobody (a new connection generation in its
# log) and keeps deciding; the guest keeps getting hints throughout.
. "$(dirname "$0")/../lib.sh"
e2e_begin libvirtd-restart
e2e_guest a 2 "corehint.work=idle"
e2e_wait_all_console "^CH guestd start" 120 a
# Write access (enforce = cap) without group libvirt: refused, and hostd says what is missing.
printf 'enforce = "cap"\n' >"$E2E_DIR/cap.conf"
"$COREHINT_HOSTD" -c "$E2E_DIR/cap.conf" --connect "$E2E_URI" --once --user nobody \
    >"$E2E_DIR/denied.log" 2>&1 &&
    e2e_fail "hostd --once with enforce = cap as nobody without group libvirt reached libvirt"
e2e_expect "a refused libvirt connection names the missing access" \
    grep -q "user nobody cannot reach qemu:///system: give it access to the libvirt socket" "$E2E_DIR/denied.log"
# Measuring only: read-only, no group needed.
e2e_expect "hostd --once as nobody without any group measures through a read-only connection" \
    sh -c '"$1" --connect "$2" --once --user nobody -v >"$3" 2>"$4" && grep -q "read-only" "$4" &&
        grep -q "\"name\": \"$5\"" "$3"' sh "$COREHINT_HOSTD" "$E2E_URI" "$E2E_DIR/ro.json" \
    "$E2E_DIR/ro.log" "corehint-e2e-a-$$"
e2e_start_hostd --interval-ms 1000 --user nobody --groups libvirt-qemu
e2e_expect "hostd runs as nobody without any capability" e2e_unprivileged "$E2E_HOSTD_PID" nobody
e2e_expect "guest a acknowledges hints" \
    e2e_until 60 e2e_status_field a 'd["channel"]["status"]["seq"] >= 2 or exit(1)'
libvirt_env_restart_libvirtd || e2e_fail "could not restart libvirtd (this test restarts only a libvirtd it started)"
e2e_log "libvirtd restarted"
e2e_expect "hostd reconnected (connection generation 2)" \
    e2e_until 60 grep -q "connected to qemu:///system (generation 2)" "$E2E_DIR/hostd.log"
d0=$(e2e_decisions)
s0=$(e2e_status_field a 'd["channel"]["status"]["seq"]')
e2e_expect "hostd keeps deciding after the restart (3 decisions after $d0)" \
    e2e_until 60 e2e_decisions_at_least $((d0 + 3))
e2e_expect "guest a keeps acknowledging hints (3 after seq $s0)" \
    e2e_until 60 e2e_status_field a "d['channel']['status']['seq'] >= $((s0 + 3)) or exit(1)"
e2e_expect "guest a still known to hostd" e2e_status_field a 'd["decision"]["preferred"]'
e2e_metrics >"$E2E_DIR/metrics.txt" || e2e_fail "GET /metrics"
e2e_expect "/metrics passes promtool" promtool check metrics <"$E2E_DIR/metrics.txt"
e2e_expect "/metrics reports the live sample time" \
    awk '$1 == "corehint_sample_seconds" && $2 > 0 { ok = 1 } END { exit !ok }' "$E2E_DIR/metrics.txt"
e2e_pass
