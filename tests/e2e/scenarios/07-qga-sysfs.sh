#!/bin/bash
# Scenario 7: the qemu-ga actuator.  Guest q runs no corehint-guestd, only qemu-ga; hostd is
# configured with "actuator = agent-sysfs" for it and writes the preferred file through
# guest-file-open/guest-file-write.  Under contention the guest's own kernel reports the set.
. "$(dirname "$0")/../lib.sh"
e2e_begin qga-sysfs
e2e_guest q 2 "corehint.role=none corehint.work=busy"
e2e_guest b 2 "corehint.work=busy"
e2e_wait_all_console "^CH work busy" 120 q b
for g in q b; do e2e_pin "$g" 2 n; done # (booted floating: e2e_pin)
e2e_until 60 e2e_guest_exec q "true" || e2e_fail "qemu-ga does not answer in guest q"
cat >"$E2E_DIR/hostd.conf" <<EOC
interval_ms = 1000
[domain $(e2e_domname q)]
actuator = agent-sysfs
EOC
mark=$(e2e_console_mark q)
e2e_start_hostd -c "$E2E_DIR/hostd.conf"
e2e_until 60 e2e_status_field q 'd["decision"]["count"] < 2 or exit(1)' || e2e_fail "hostd never shrank q"
want=$(e2e_status_field q 'd["decision"]["preferred"]')
e2e_wait_console q "^CH preferred=$want " 30 "$mark" >/dev/null ||
    e2e_fail "guest q's kernel never preferred $want (written through qemu-ga)"
e2e_expect "hostd logged the agent write" grep -q "agent-sysfs applied" "$E2E_DIR/hostd.log"
e2e_pass
