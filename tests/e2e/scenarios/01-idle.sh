#!/bin/bash
# Scenario 1: an idle host.  Two unpinned idle guests and hostd: both keep their full preferred
# set, hostd's hints (the full set) are acknowledged, and no guest ever prints a smaller set.
. "$(dirname "$0")/../lib.sh"
e2e_begin idle
e2e_guest a 2 "corehint.work=idle"
e2e_guest b 2 "corehint.work=idle"
e2e_wait_all_console "^CH guestd start" 120 a b
# Booting TCG guests keep the host's CPUs busy: that is real contention, and hostd would
# rightly act on it.  This scenario is about an idle host, so it starts when the boot is over.
e2e_wait_idle a 60
e2e_wait_idle b 60
mark_a=$(e2e_console_mark a)
mark_b=$(e2e_console_mark b)
e2e_start_hostd --interval-ms 1000
for g in a b; do
    e2e_expect "guest $g acknowledges hints in mode host" \
        e2e_until 30 e2e_status_field "$g" 'd["channel"]["hints"] >= 3 and d["channel"]["status"]["seq"] == d["channel"]["seq"] and d["channel"]["status"]["mode"] == "host" or exit(1)'
done
e2e_expect "hostd makes five more decisions on the idle host" e2e_wait_decisions 5 60
for g in a b; do
    e2e_expect "guest $g: hostd decided the full set" \
        e2e_status_field "$g" 'd["decision"]["preferred"] == "0-1" or exit(1)'
    e2e_expect "guest $g: the guest applied the full set" \
        e2e_status_field "$g" 'd["channel"]["status"]["applied"] == "0-1" or exit(1)'
    mark=$mark_a
    [ $g = b ] && mark=$mark_b
    sets=$(e2e_preferred_sets "$g" "$mark" | sort -u)
    # Nothing at all printed since hostd started means nothing changed: the set is the boot one.
    e2e_expect "guest $g printed no other set since hostd started (saw: $(echo $sets))" \
        test -z "$sets" -o "$sets" = "0-1"
    e2e_expect "guest $g's last printed set is the full set" test "$(e2e_preferred "$g")" = "0-1"
done
e2e_pass
