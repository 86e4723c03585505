#!/bin/bash
# Scenario 11: the helper as users run it - a Debian 12 guest booting the patched kernel with
# systemd and udev as PID 1 (tests/e2e/mkdebian), the corehint-guest .deb (debian/) installed by
# apt inside it.  Checks: apt installs it offline and does not start it (no port yet); the
# org.corehint.0 port hot-plugged with virsh starts the unit through the udev rule; under the
# unit's hardening the hints are written to the kernel's preferred file; systemctl stop
# restores the full set; a SIGKILL is followed by the full set while it is down (ExecStopPost)
# and by a restart (Restart=always) that applies hints again.  The host side of the port is
# this script (tests/e2e/fakehost), speaking protocol version 2.
. "$(dirname "$0")/../lib.sh"
e2e_begin systemd-guest
build=$(cd "$(dirname "$COREHINT_HOSTD")/.." && pwd)
t=$SECONDS
cmake --build "$build" --target deb >"$E2E_DIR/deb-build.log" 2>&1 ||
    { tail -20 "$E2E_DIR/deb-build.log" >&2; e2e_fail "cannot build the .deb"; }
deb=$(find "$build/deb" -maxdepth 1 -name 'corehint-guest_*.deb' | head -1)
[ -n "$deb" ] || e2e_fail "no .deb in $build/deb"
e2e_log "package $deb ($((SECONDS - t)) s)"
t=$SECONDS
initrd=$("$E2E_SRC/tests/e2e/mkdebian") || e2e_fail "mkdebian failed"
e2e_log "Debian image $initrd ($((SECONDS - t)) s)"

name=$(e2e_domname deb)
# The busybox guests' domain, with 1 GiB (the root lives in the initramfs) and no corehint
# channel: the port arrives later, hot-plugged.
sed -e "s|@TYPE@|$E2E_TYPE|" -e "s|@NAME@|$name|" -e "s|@MEMORY@|1024|" -e "s|@VCPUS@|2|g" \
    -e "s|@ONREBOOT@|destroy|" -e "s|@EXTRA@||" -e "s|@CPUTUNE@||" -e "s|@KERNEL@|$E2E_KERNEL|" -e "s|@INITRD@|$initrd|" \
    -e "s|@CMDLINE@|systemd.show_status=false${E2E_CLOCK_ARGS:+ $E2E_CLOCK_ARGS}|" -e "s|@SERIAL@|$E2E_DIR/deb.log|" \
    "$E2E_SRC/tests/e2e/domain.xml.in" |
    python3 -c 'import re, sys; t = sys.stdin.read(); print(re.sub(r"\s*<channel type=.unix.>\s*<source[^>]*@CHANNEL@[^>]*/>\s*<target[^>]*org.corehint.0[^>]*/>\s*</channel>", "", t))' \
    >"$E2E_DIR/deb.xml"
grep -q org.corehint.0 "$E2E_DIR/deb.xml" && e2e_fail "the domain XML still has the corehint channel"
t=$SECONDS
guests_start "$name" "$E2E_DIR/deb.xml" || e2e_fail "cannot start the Debian guest"
e2e_wait_console deb "^CH systemd up" 300 >/dev/null || e2e_fail "systemd did not come up within 300 s"
e2e_until 120 virsh -q -c "$E2E_URI" qemu-agent-command "$name" '{"execute":"guest-ping"}' ||
    e2e_fail "qemu-guest-agent does not answer"
boot_s=$((SECONDS - t))
e2e_log "ok: Debian guest up under systemd, qemu-ga answering, $boot_s s after start"

run() { # shell command in the guest; prints its stdout; returns its exit status
    "$E2E_SRC/tests/e2e/qga-run" "$E2E_URI" "$name" "$1"
}

run 'cat /proc/1/comm' | grep -qx systemd || e2e_fail "PID 1 is not systemd"
"$E2E_SRC/tests/e2e/qga-run" "$E2E_URI" "$name" --put "$deb" /root/corehint-guest.deb ||
    e2e_fail "cannot copy the .deb into the guest"
out=$(run 'DEBIAN_FRONTEND=noninteractive apt-get install -y /root/corehint-guest.deb 2>&1') ||
    e2e_fail "apt-get install failed: $out"
e2e_log "ok: apt installed corehint-guest offline"
run 'systemctl is-enabled corehint-guestd.service' | grep -qx static ||
    e2e_fail "the unit is not static (udev starts it): $(run 'systemctl is-enabled corehint-guestd.service')"
state=$(run 'systemctl is-active corehint-guestd.service' || true)
[ "$state" = inactive ] || e2e_fail "the unit is $state without a port: only the port should start it"
run 'cat /sys/devices/system/cpu/preferred' | grep -qx 0-1 || e2e_fail "preferred is not 0-1 at the start"

# The port arrives: udev's rule wants the unit.
sock=$E2E_DIR/deb.sock
chan=$(e2e_channel_xml "$sock")
t0=$(date +%s%N)
virsh -q -c "$E2E_URI" attach-device "$name" "$chan" --live >/dev/null ||
    e2e_fail "virsh attach-device (the corehint channel)"
e2e_until 60 sh -c "[ \"\$($E2E_SRC/tests/e2e/qga-run $E2E_URI $name 'systemctl is-active corehint-guestd.service')\" = active ]" ||
    e2e_fail "the unit did not start when the port appeared: $(run 'systemctl status corehint-guestd.service --no-pager 2>&1 | tail -5')"
e2e_log "ok: port hot-plugged, unit active $(( ($(date +%s%N) - t0) / 1000000 )) ms later"

# This script is the host: hello, then a hint for vCPU 0 only, renewed every second.  Started
# as the interpreter itself: where python3 is a wrapper script (a pyenv shim forks the real
# interpreter) $! was the wrapper, and stopping it left the fake host running.
py=$(python3 -c 'import sys; print(sys.executable)') && [ -x "$py" ] || e2e_fail "no python3 interpreter"
"$py" "$E2E_SRC/tests/e2e/fakehost" "$sock" "0" >"$E2E_DIR/fakehost.log" 2>&1 &
fake=$!
E2E_PIDS+=("$fake")
owned_pid "$fake"
pref_is() { [ "$("$E2E_SRC/tests/e2e/qga-run" "$E2E_URI" "$name" 'cat /sys/devices/system/cpu/preferred')" = "$1" ]; }
e2e_until 60 pref_is 0 ||
    e2e_fail "the hint was not written under the unit's hardening: preferred $(run 'cat /sys/devices/system/cpu/preferred'); $(tail -3 "$E2E_DIR/fakehost.log")"
# The hardening is in force, not skipped for want of kernel support: a seccomp filter
# (SystemCallFilter=), no_new_privs, and a network namespace of its own (PrivateNetwork=).
hard=$(run 'p=$(systemctl show -p MainPID --value corehint-guestd.service); grep -E "^(Seccomp|NoNewPrivs):" /proc/$p/status | tr -s "\t " " " | tr "\n" " "; [ "$(readlink /proc/$p/ns/net)" != "$(readlink /proc/1/ns/net)" ] && echo private-net')
case $hard in *"Seccomp: 2"*"NoNewPrivs: 1"*private-net* | *"NoNewPrivs: 1"*"Seccomp: 2"*private-net*) ;;
*) e2e_fail "the unit's hardening is not in force: $hard" ;;
esac
e2e_log "ok: hint 0 applied by the unit to the kernel's preferred file, under its hardening ($hard)"

run 'systemctl stop corehint-guestd.service' || e2e_fail "systemctl stop"
pref_is 0-1 || e2e_fail "systemctl stop left preferred at $(run 'cat /sys/devices/system/cpu/preferred')"
e2e_log "ok: systemctl stop restored the full set"
run 'systemctl start corehint-guestd.service' || e2e_fail "systemctl start"
e2e_until 60 pref_is 0 || e2e_fail "the hint was not applied after the restart"

pid=$(run 'systemctl show -p MainPID --value corehint-guestd.service')
# By the daemon's syslog identifier, not its unit: journald attributes a line to a unit from
# the writer's cgroup, which a process as short-lived as ExecStopPost's may have left by then
# (a CI run found the restart in the journal but not the restore line, under -u).
restores() { run 'journalctl -b -o cat -t corehint-guestd | grep -c "restored every online CPU as preferred"' || true; }
before=$(restores)
run 'systemctl kill -s KILL corehint-guestd.service' || e2e_fail "systemctl kill"
# Between the kill and the restart (RestartSec=1) ExecStopPost restores the full set; the new
# helper applies the host's hint a second later, too soon to be sure to see the full set in
# the file from here: its journal line is the evidence.
e2e_until 30 sh -c "[ \"\$(\"$E2E_SRC/tests/e2e/qga-run\" \"$E2E_URI\" \"$name\" 'journalctl -b -o cat -t corehint-guestd | grep -c \"restored every online CPU as preferred\"')\" -gt $before ]" ||
    e2e_fail "ExecStopPost did not restore the full set after the SIGKILL (journal: $(run 'journalctl -b -o short-monotonic _SYSTEMD_UNIT=corehint-guestd.service + SYSLOG_IDENTIFIER=corehint-guestd | tail -15'))"
e2e_log "ok: ExecStopPost restored the full set while the killed helper was down"
e2e_until 60 sh -c "p=\$($E2E_SRC/tests/e2e/qga-run $E2E_URI $name 'systemctl show -p MainPID --value corehint-guestd.service'); [ -n \"\$p\" ] && [ \"\$p\" != 0 ] && [ \"\$p\" != $pid ]" ||
    e2e_fail "systemd did not restart the helper after SIGKILL"
e2e_until 60 pref_is 0 || e2e_fail "the restarted helper did not apply the hint"
e2e_log "ok: restarted by systemd (pid $pid -> $(run 'systemctl show -p MainPID --value corehint-guestd.service')), hint applied again"
kill "$fake" 2>/dev/null
e2e_pass
