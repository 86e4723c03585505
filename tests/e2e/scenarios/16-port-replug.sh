#!/bin/bash
# Scenario 16: the corehint port unplugged while hostd is away, and plugged again.  The helper
# keeps its virtio port open while the host side is closed (waiting for SIGIO); when the port
# itself goes (virsh detach-device --live) it must let go of the dead device and find the new
# one (--port auto, by name, as the unit's udev path does), so that the next hostd's hints
# apply.  Before that was handled it sat on the unplugged port for good.
. "$(dirname "$0")/../lib.sh"
e2e_begin port-replug
e2e_guest a 2 "corehint.work=idle corehint.args=--port,auto"
e2e_wait_all_console "^CH guestd start" 120 a
dom=$(e2e_domname a)
e2e_start_hostd --interval-ms 1000
e2e_expect "the guest acknowledges hints (port found by name)" \
    e2e_until 60 e2e_status_field a 'd["channel"]["status"]["seq"] >= 2 and d["channel"]["status"]["mode"] == "host" or exit(1)'

mark=$(e2e_console_mark a)
kill -TERM "$E2E_HOSTD_PID"
wait "$E2E_HOSTD_PID" 2>/dev/null
e2e_wait_console a "host side closed; waiting for it" 30 "$mark" >/dev/null ||
    e2e_fail "the guest did not notice hostd leave (port kept open)"
chan=$(e2e_channel_xml "$E2E_DIR/a.sock")
virsh -q -c "$E2E_URI" detach-device "$dom" "$chan" --live >/dev/null ||
    e2e_fail "virsh detach-device (the corehint channel)"
e2e_wait_console a "closed: port gone" 30 "$mark" >/dev/null ||
    e2e_fail "the guest did not let go of the unplugged port: $(tail -n +"$mark" "$E2E_DIR/a.log" | grep -E 'port ' | tail -3 | tr '\n' '|')"
e2e_log "ok: the unplugged port was closed while the host was away"
virsh -q -c "$E2E_URI" attach-device "$dom" "$chan" --live >/dev/null ||
    e2e_fail "virsh attach-device (the corehint channel)"
e2e_start_hostd --interval-ms 1000
e2e_expect "the next hostd's hints apply on the plugged-in port" \
    e2e_until 60 e2e_status_field a 'd["channel"]["status"]["seq"] >= 1 and d["channel"]["status"]["mode"] == "host" or exit(1)'
e2e_expect "the guest reopened the new port" \
    e2e_wait_console a "open \\(character device\\)" 5 "$mark"
e2e_pass
