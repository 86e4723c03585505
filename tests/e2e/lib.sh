# shellcheck shell=bash
# Shared harness of the virsh-driven end-to-end tests.  A scenario script sources this file,
# calls e2e_begin, defines guests with e2e_guest, starts hostd with e2e_hostd, asserts with
# e2e_wait_console / e2e_expect, and ends with e2e_pass.  Everything it defines or starts is
# removed by the EXIT trap, on success and on failure alike.
#
# Environment (set by tests/e2e/CMakeLists.txt):
#   COREHINT_HOSTD   corehint-hostd binary
#   COREHINT_GUESTD  statically linked corehint-guestd binary (copied into the guest)
#   COREHINT_SRC     source tree
#   COREHINT_DOMAIN_TYPE  qemu (default; TCG) or kvm
#   COREHINT_KERNEL_DIR   a kernel-patch/build output directory to use instead of building
#   COREHINT_E2E_KEEP     set: keep the run directory (consoles, hostd log) after a pass
#   COREHINT_CHBENCH      the chbench binary: the guest image then carries the benchmark tools
set -uo pipefail

E2E_SRC=${COREHINT_SRC:?COREHINT_SRC not set}
E2E_URI=qemu:///system
E2E_TYPE=${COREHINT_DOMAIN_TYPE:-qemu}
E2E_PIDS=()
E2E_T0=$SECONDS
E2E_NAME=
E2E_DIR=
E2E_KERNEL=
E2E_INITRD=

# Debian's python3 (what scripts/deps installs) for every python3 the scenarios run: one found
# first in PATH may be a version manager's shim (pyenv: 0.58 s a call against 0.07 s, measured
# on these machines), and the scenarios poll hostd's /status through python3 five times a
# second.
if [ -x /usr/bin/python3 ]; then
    python3() { /usr/bin/python3 "$@"; }
fi

# shellcheck source=../lib/libvirt-env
. "$E2E_SRC/tests/lib/libvirt-env"
# shellcheck source=../lib/guests
. "$E2E_SRC/tests/lib/guests"
# shellcheck source=../lib/owned
. "$E2E_SRC/tests/lib/owned"
# shellcheck source=../lib/guest-firmware
. "$E2E_SRC/tests/lib/guest-firmware"
# shellcheck source=../lib/guest-clock
. "$E2E_SRC/tests/lib/guest-clock"

e2e_log() { echo "[e2e $E2E_NAME +$((SECONDS - E2E_T0))s] $*" >&2; }

e2e_fail() {
    e2e_log "FAIL: $*"
    e2e_dump
    exit 1
}

e2e_dump() {
    local f
    for f in "$E2E_DIR"/*.log; do
        [ -f "$f" ] || continue
        echo "----- $(basename "$f") (last 40 lines)" >&2
        tail -n 40 "$f" >&2
    done
}

e2e_cleanup() {
    local rc=$? p
    # what a scenario must undo before anything else (a libvirtd it stopped)
    [ -z "${E2E_ON_EXIT:-}" ] || eval "$E2E_ON_EXIT"
    for p in "${E2E_PIDS[@]}"; do
        kill "$p" 2>/dev/null && wait "$p" 2>/dev/null
    done
    guests_remove_all && owned_end
    libvirt_env_down
    # Nothing this test started may outlive it: a process still naming the test's own run
    # directory (a socket, a log) is one of ours that the cleanup above missed.  It is
    # stopped, and the test fails (a wrapper's pid in E2E_PIDS once hid a fake host this way).
    if [ -n "$E2E_DIR" ] && [ -z "${COREHINT_E2E_KEEP:-}" ]; then
        local left
        left=$(ps -eo pid=,args= | D=$E2E_DIR awk 'index($0, ENVIRON["D"]) {print}')
        if [ -n "$left" ]; then
            echo "e2e: FAIL: left running after the cleanup (now stopped):" >&2
            echo "$left" >&2
            for p in $(awk '{print $1}' <<<"$left"); do kill "$p" 2>/dev/null; done
            [ $rc -ne 0 ] || rc=1
        fi
    fi
    if [ $rc -eq 0 ] && [ -n "$E2E_DIR" ] && [ -z "${COREHINT_E2E_KEEP:-}" ]; then
        rm -rf "$E2E_DIR"
    elif [ -n "$E2E_DIR" ]; then
        echo "e2e: logs kept in $E2E_DIR" >&2
    fi
    exit $rc
}

# e2e_begin NAME: set up the run directory, libvirt, the kernel and the guest image.
e2e_begin() {
    E2E_NAME=$1
    [ "$(id -u)" -eq 0 ] || { echo "e2e: must run as root (libvirtd, qemu:///system)" >&2; exit 1; }
    for b in "${COREHINT_HOSTD:?}" "${COREHINT_GUESTD:?}"; do
        [ -x "$b" ] || { echo "e2e: $b missing; build first" >&2; exit 1; }
    done
    command -v virsh >/dev/null || { echo "e2e: virsh missing (scripts/deps test)" >&2; exit 1; }
    guest_firmware_check || exit 1
    mkdir -p /var/lib/corehint-test/run
    chmod 755 /var/lib/corehint-test /var/lib/corehint-test/run
    E2E_DIR=$(mktemp -d "/var/lib/corehint-test/run/$E2E_NAME.XXXXXX")
    chmod 755 "$E2E_DIR"
    chown libvirt-qemu "$E2E_DIR" 2>/dev/null || true
    trap e2e_cleanup EXIT
    trap 'exit 130' INT TERM
    libvirt_env_up || exit 1
    # What a test killed before its cleanup (a ctest timeout) left behind goes first.
    owned_sweep || exit 1
    owned_begin || { echo "e2e: cannot register under $OWNED_STATE" >&2; exit 1; }
    # One hostd per host: another one would hold the guests' channel sockets (qemu accepts a
    # single client per chardev) and every scenario would fail for a reason it cannot show.
    # Zombies do not count: a PID 1 that never reaps keeps a killed hostd listed forever.
    # A hostd on libvirt's test driver or replaying a trace (the component tests) holds no
    # guest's channel and does not count either.
    local other="" pid cmd
    for pid in $(ps -C corehint-hostd -o pid=,stat= | awk '$2 !~ /^[ZX]/ {print $1}'); do
        cmd=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || continue
        case $cmd in *"--connect test:"* | *"--replay "*) continue ;; esac
        other="$other$pid "
    done
    [ -z "$other" ] || { echo "e2e: another corehint-hostd is running (pid $other); stop it first" >&2; exit 1; }
    local kdir=${COREHINT_KERNEL_DIR:-}
    if [ -z "$kdir" ]; then
        kdir=$("$E2E_SRC/kernel-patch/build" --print-dir) || { echo "e2e: kernel build failed" >&2; exit 1; }
    fi
    E2E_KERNEL=$kdir/bzImage
    [ -r "$E2E_KERNEL" ] || { echo "e2e: no $E2E_KERNEL" >&2; exit 1; }
    local extra=()
    [ -n "${COREHINT_CHBENCH:-}" ] && extra=("$COREHINT_CHBENCH" "$kdir/steal_governor.ko")
    E2E_INITRD=$("$E2E_SRC/tests/e2e/mkguest" "$COREHINT_GUESTD" "${extra[@]}") ||
        { echo "e2e: mkguest failed" >&2; exit 1; }
    # qemu (user libvirt-qemu) reads the kernel: make its directory chain traversable.
    chmod o+rx "$kdir" && chmod o+r "$E2E_KERNEL"
    e2e_guest_clock || exit 1
    e2e_log "kernel $E2E_KERNEL initrd $E2E_INITRD dir $E2E_DIR"
}

# e2e_guest_clock: set E2E_CLOCK_ARGS, the guest kernel arguments that make the guests keep
# time with the host's TSC (tests/lib/guest-clock says why).
e2e_guest_clock() {
    E2E_CLOCK_ARGS=$(guest_clock_args) || return 1
    e2e_log "guest clock: ${E2E_CLOCK_ARGS:-ticks (no constant host TSC)}"
}

# e2e_guest SHORTNAME VCPUS "CMDLINE" [PIN]: define and start a guest; its console goes to
# $E2E_DIR/SHORTNAME.log, its corehint channel socket is $E2E_DIR/SHORTNAME.sock.  PIN is a host
# cpuset every vCPU is pinned to, or "n" to pin vCPU n to host CPU n.  E2E_ON_REBOOT (default
# destroy) is the domain's <on_reboot>: "restart" for a guest that survives `virsh reset`.
# E2E_STEAL_CHANNEL=1 adds the EMULATED STEAL test channel (org.corehint.test.steal, host side
# $E2E_DIR/SHORTNAME.steal.sock; tests/bench/stealfeed).
e2e_guest() {
    local short=$1 vcpus=$2 cmdline=$3 pin=${4:-} name cputune="" v onreboot=${E2E_ON_REBOOT:-destroy}
    local devices=""
    [ "${E2E_STEAL_CHANNEL:-0}" = 1 ] &&
        devices="<channel type='unix'><source mode='bind' path='$E2E_DIR/$short.steal.sock'/><target type='virtio' name='org.corehint.test.steal'/></channel>"
    name="corehint-e2e-$short-$$"
    if [ -n "$pin" ]; then
        cputune="<cputune>"
        for ((v = 0; v < vcpus; v++)); do
            cputune+="<vcpupin vcpu='$v' cpuset='$(pin_cpuset "$pin" "$v")'/>"
        done
        cputune+="</cputune>"
    fi
    sed -e "s|@TYPE@|$E2E_TYPE|" -e "s|@NAME@|$name|" -e "s|@MEMORY@|256|" -e "s|@VCPUS@|$vcpus|g" \
        -e "s|@ONREBOOT@|$onreboot|" -e "s|@EXTRA@|$devices|" \
        -e "s|@CPUTUNE@|$cputune|" -e "s|@KERNEL@|$E2E_KERNEL|" -e "s|@INITRD@|$E2E_INITRD|" \
        -e "s|@CMDLINE@|$cmdline${E2E_CLOCK_ARGS:+ $E2E_CLOCK_ARGS}|" -e "s|@SERIAL@|$E2E_DIR/$short.log|" \
        -e "s|@CHANNEL@|$E2E_DIR/$short.sock|" "$E2E_SRC/tests/e2e/domain.xml.in" >"$E2E_DIR/$short.xml"
    guests_start "$name" "$E2E_DIR/$short.xml" || e2e_fail "cannot start guest $short"
    e2e_log "started $name ($vcpus vCPUs${pin:+, pinned to $pin}, $cmdline): $GUESTS_START_S"
}

e2e_domname() { echo "corehint-e2e-$1-$$"; }

# The host cpuset vCPU V is pinned to under PIN (e2e_guest's, e2e_pin's): PIN itself, or V
# for "n".
pin_cpuset() { if [ "$1" = n ]; then echo "$2"; else echo "$1"; fi; }

# e2e_pin SHORTNAME VCPUS PIN: pin every vCPU of a running guest live (virsh vcpupin --live),
# as an operator pins a running VM; PIN as for e2e_guest.  Guests that are busy and pinned
# alike from the start can keep one another from booting: the host let one guest's vCPU
# thread crawl for minutes (a CI rehearsal, 2026-12-06: a guest not booted after 120 s;
# tests/bench/results/2026-12-06-pinned-host-split), so such scenarios boot floating and pin
# once the guests are up.
e2e_pin() {
    local short=$1 vcpus=$2 pin=$3 v
    for ((v = 0; v < vcpus; v++)); do
        virsh -q -c "$E2E_URI" vcpupin "$(e2e_domname "$short")" "$v" "$(pin_cpuset "$pin" "$v")" \
            --live >/dev/null ||
            e2e_fail "virsh vcpupin $short $v --live failed"
    done
    e2e_log "pinned $short ($vcpus vCPUs) to $pin"
}

# e2e_channel_xml SOCKET: write $E2E_DIR/channel.xml, the corehint channel on SOCKET as a
# device for virsh attach-device / detach-device --live, and print its path.
e2e_channel_xml() {
    cat >"$E2E_DIR/channel.xml" <<XML
<channel type='unix'>
  <source mode='bind' path='$1'/>
  <target type='virtio' name='org.corehint.0'/>
</channel>
XML
    echo "$E2E_DIR/channel.xml"
}

# e2e_destroy SHORTNAME: stop a guest now (it stays defined until cleanup).
e2e_destroy() {
    virsh -q -c "$E2E_URI" destroy "$(e2e_domname "$1")" >/dev/null || e2e_fail "virsh destroy $1"
    e2e_log "destroyed $1"
}

# e2e_wait_console SHORTNAME ERE TIMEOUT_S [FROM_LINE]: wait for a console line matching ERE,
# at or after line FROM_LINE; prints the matching line.
e2e_wait_console() {
    guests_wait_line "$E2E_DIR/$1.log" "$2" "$3" "${4:-1}"
}

# e2e_vcpu_wait_ns SHORTNAME: the most run-queue wait (ns) any vCPU thread of the guest has had
# on the host so far (libvirt's vcpu.N.delay, from the thread's schedstat).
e2e_vcpu_wait_ns() {
    virsh -q -c "$E2E_URI" domstats --vcpu --raw "$(e2e_domname "$1")" 2>/dev/null |
        awk -F= '/vcpu\.[0-9]+\.delay=/ { if ($2 + 0 > m) m = $2 + 0 } END { printf "%.0f\n", m }'
}

# e2e_wait_console_running SHORTNAME ERE BUDGET_S FROM_LINE WAIT0_NS: like e2e_wait_console,
# but the budget counts the time the guest could run: every second its most-waiting vCPU
# thread spent queued on the host since WAIT0_NS (e2e_vcpu_wait_ns, taken when the clock
# started) is added to it.  A guest cannot react while the host does not run it; with vCPUs
# pinned 1:1 this host has kept a runnable vCPU thread waiting for seconds.  Prints the
# matching line; E2E_QUEUED_S is the extra time granted.
e2e_wait_console_running() {
    local short=$1 re=$2 budget=$3 from=$4 w0=$5 t0=$SECONDS line w
    E2E_QUEUED_S=0
    while :; do
        line=$(e2e_wait_console "$short" "$re" 1 "$from") && { echo "$line"; return 0; }
        w=$(e2e_vcpu_wait_ns "$short")
        # (a malformed number would abort the caller's function in bash arithmetic, silently)
        [[ $w =~ ^[0-9]+$ && $w0 =~ ^[0-9]+$ ]] || { echo "e2e: bad vCPU wait '$w' / '$w0'" >&2; return 1; }
        E2E_QUEUED_S=$(( (w - w0) / 1000000000 ))
        # ten times the budget at most, whatever the host does
        [ $((SECONDS - t0)) -lt $((budget + E2E_QUEUED_S)) ] && [ $((SECONDS - t0)) -lt $((10 * budget)) ] ||
            return 1
    done
}

# Number of console lines so far, to wait for something newer than now.
e2e_console_mark() { wc -l <"$E2E_DIR/$1.log" 2>/dev/null || echo 0; }

# e2e_preferred_sets SHORTNAME [FROM_LINE]: every preferred set the guest printed, in order.
e2e_preferred_sets() {
    tail -n +"${2:-1}" "$E2E_DIR/$1.log" | tr -d '\r' | grep -E '^CH preferred=' |
        sed -E 's/^CH preferred=([^ ]*).*/\1/'
}

# The guest's latest reported preferred set.
e2e_preferred() {
    e2e_preferred_sets "$1" | tail -n 1
}

# e2e_preferred_is SHORTNAME SET: the guest's latest reported preferred set is SET (for
# e2e_until, which must re-read it on every try).
e2e_preferred_is() {
    [ "$(e2e_preferred "$1")" = "$2" ]
}

# e2e_hostd ARGS...: start corehint-hostd in the background, logging to hostd.log.
e2e_hostd() {
    # shellcheck disable=SC2086
    ${COREHINT_WRAP:-} "$COREHINT_HOSTD" --connect "$E2E_URI" --foreground "$@" >>"$E2E_DIR/hostd.log" 2>&1 &
    E2E_HOSTD_PID=$!
    E2E_PIDS+=("$E2E_HOSTD_PID")
    owned_pid "$E2E_HOSTD_PID"
    e2e_log "hostd pid $E2E_HOSTD_PID: $*"
}

e2e_expect() { # description, command...
    local what=$1
    shift
    "$@" || e2e_fail "$what"
    e2e_log "ok: $what"
}

e2e_pass() {
    e2e_log "PASS ($((SECONDS - E2E_T0)) s)"
    exit 0
}

# The port hostd's HTTP server listens on (it is started with --metrics-listen 127.0.0.1:0).
# Only log lines after line $1 count: the log is shared by every hostd a scenario starts.
e2e_hostd_port() {
    local from=$1 end=$((SECONDS + 20)) port
    while [ $SECONDS -lt $end ]; do
        port=$(tail -n +"$((from + 1))" "$E2E_DIR/hostd.log" |
            grep -oE 'serving /metrics and /status on 127\.0\.0\.1 port [0-9]+' | tail -n 1 | awk '{print $NF}')
        [ -n "$port" ] && { echo "$port"; return 0; }
        sleep 0.2
    done
    return 1
}

# e2e_status: hostd's /status document.
e2e_status() {
    curl -sf --max-time 5 "http://127.0.0.1:$E2E_HOSTD_HTTP/status"
}

# e2e_decisions: how many decisions hostd has made (its own counter, from /status).
e2e_decisions() {
    e2e_status | python3 -c 'import json, sys; print(json.load(sys.stdin)["daemon"]["decisions"])'
}

# e2e_wait_decisions N TIMEOUT_S: wait until hostd has made N more decisions than now, so that
# a window "of N intervals" is measured in hostd's intervals, not in wall time.
e2e_wait_decisions() {
    local d0
    d0=$(e2e_decisions) || return 1
    e2e_until "$2" e2e_decisions_at_least $((d0 + $1))
}
e2e_decisions_at_least() { [ "$(e2e_decisions)" -ge "$1" ]; }

e2e_metrics() {
    curl -sf --max-time 5 "http://127.0.0.1:$E2E_HOSTD_HTTP/metrics"
}

# e2e_status_field SHORTNAME PYEXPR: evaluate PYEXPR on the guest's entry `d` of /status
# (e.g. 'd["channel"]["status"]["applied"]'); prints the value, fails when absent.
e2e_status_field() {
    local name
    name=$(e2e_domname "$1")
    e2e_status | python3 -c '
import json, sys
doc = json.load(sys.stdin)
for d in doc.get("domains", []):
    if d.get("name") == sys.argv[1]:
        try:
            print(eval(sys.argv[2], {}, {"d": d, "doc": doc}))
        except (KeyError, IndexError, TypeError):
            sys.exit(1)
        sys.exit(0)
sys.exit(1)' "$name" "$2"
}

# e2e_start_hostd ARGS...: start hostd with an ephemeral HTTP port and wait until it serves.
e2e_start_hostd() {
    local mark
    mark=0
    [ -f "$E2E_DIR/hostd.log" ] && mark=$(wc -l <"$E2E_DIR/hostd.log")
    e2e_hostd --metrics-listen 127.0.0.1:0 "$@"
    E2E_HOSTD_HTTP=$(e2e_hostd_port "$mark") || e2e_fail "hostd did not start its HTTP server"
    e2e_log "hostd serving on 127.0.0.1:$E2E_HOSTD_HTTP"
}

# e2e_unprivileged PID USER: the process runs as USER (real, effective, saved, fs uid), holds
# no capability and cannot gain one (no_new_privs).
e2e_unprivileged() {
    local uid
    uid=$(id -u "$2") || return 1
    awk -v uid="$uid" '
        /^Uid:/ { for (i = 2; i <= 5; i++) if ($i != uid) bad = bad " uid " $i }
        /^Cap(Inh|Prm|Eff|Amb):/ { if ($2 !~ /^0+$/) bad = bad " " $1 $2 }
        /^NoNewPrivs:/ { nnp = $2 }
        END { if (bad != "" || nnp != 1) { print "pid status:" bad " NoNewPrivs " nnp > "/dev/stderr"; exit 1 } }
    ' "/proc/$1/status"
}

# e2e_until TIMEOUT_S COMMAND...: retry COMMAND every 0.2 s until it succeeds.
e2e_until() {
    local end=$((SECONDS + $1))
    shift
    while [ $SECONDS -lt $end ]; do
        "$@" >/dev/null 2>&1 && return 0
        sleep 0.2
    done
    return 1
}

# e2e_undefine SHORTNAME: destroy (if running) and undefine a guest now.
e2e_undefine() {
    local name
    name=$(e2e_domname "$1")
    guests_remove "$name" || e2e_fail "cannot remove guest $1"
}

# e2e_wait_all_console ERE TIMEOUT_S SHORTNAME...: every named guest prints a matching line.
e2e_wait_all_console() {
    local re=$1 timeout=$2 g
    shift 2
    for g in "$@"; do
        e2e_wait_console "$g" "$re" "$timeout" >/dev/null || e2e_fail "guest $g: no console line matching /$re/ within $timeout s"
    done
}

# e2e_wait_idle SHORTNAME TIMEOUT_S: wait until the guest's vCPUs use less than 0.3 CPU (boot done).
e2e_wait_idle() {
    local name end t0 t1
    name=$(e2e_domname "$1")
    end=$((SECONDS + $2))
    while [ $SECONDS -lt $end ]; do
        t0=$(virsh -q -c "$E2E_URI" domstats --cpu-total --raw "$name" | awk -F= '/cpu.time=/ {print $2}')
        sleep 1
        t1=$(virsh -q -c "$E2E_URI" domstats --cpu-total --raw "$name" | awk -F= '/cpu.time=/ {print $2}')
        [ -n "$t0" ] && [ -n "$t1" ] && [ $((t1 - t0)) -lt 300000000 ] && return 0
    done
    e2e_fail "guest $1 did not become idle within $2 s"
}

# e2e_guest_exec SHORTNAME "SHELL COMMAND": run a command in the guest through qemu-ga.
e2e_guest_exec() {
    local cmd
    cmd=$(python3 -c 'import json,sys; print(json.dumps({"execute": "guest-exec", "arguments": {"path": "/bin/sh", "arg": ["-c", sys.argv[1]]}}))' "$2")
    virsh -q -c "$E2E_URI" qemu-agent-command "$(e2e_domname "$1")" "$cmd" >/dev/null
}
