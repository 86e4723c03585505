#!/bin/bash
# Scenario 13: per-VM policy set by an operator with virsh alone, in the domain's own
# <metadata> (namespace http://corehint.org/xmlns/policy/1).  Two busy 2-vCPU guests share the
# host and hostd shrinks both to one vCPU; then, on guest a, with `virsh metadata --live`:
#  - opt_out="yes": a gets all its vCPUs (reason opt-out) within two intervals of the command
#    (libvirt's METADATA_CHANGE event makes hostd read the XML again), and hostd says so once;
#  - an invalid element: one warning naming the fault, however many intervals pass, the
#    defaults apply again (a shrinks), /status shows the error;
#  - weight="3": a's weight is 3 and its entitlement passes b's; a restarted hostd reads it
#    back from the domain at once;
#  - --remove: the defaults again, said once.
# Every change is also checked in /status ("settings": what is in force and from where).
. "$(dirname "$0")/../lib.sh"
interval_ms=1000
hostd_budget_ms=$((2 * interval_ms + 1000)) # the next sample, plus TCG's slack
uri=http://corehint.org/xmlns/policy/1
e2e_begin metadata
e2e_guest a 2 "corehint.work=busy"
e2e_guest b 2 "corehint.work=busy"
e2e_wait_all_console "^CH work busy" 120 a b
# -v -v: the debug line of each libvirt domain event shows when hostd reads the XML again
e2e_start_hostd --interval-ms $interval_ms -v -v
for g in a b; do
    e2e_until 60 e2e_status_field "$g" 'd["decision"]["count"] == 1 or exit(1)' ||
        e2e_fail "guest $g: not shrunk to one vCPU"
done
e2e_log "ok: both guests shrunk to one vCPU"
dom=$(e2e_domname a)

field() { e2e_status_field a "$1"; }
log_count() { grep -c -F "$1" "$E2E_DIR/hostd.log"; }

# virsh metadata ARGS on a; hostd must log the change (LOGPAT, a fixed string) within
# hostd_budget_ms of the command (libvirt's event, the next sample's XML read), and /status
# must show PYEXPR for a soon after (the decision of that sample; the poll adds its own delay
# on a loaded TCG host, so it gets more room).
change() { # what logpat pyexpr virsh-args...
    local what=$1 pat=$2 expr=$3 t0 took mark line stamp
    shift 3
    mark=$(wc -l <"$E2E_DIR/hostd.log")
    t0=$(date +%s%3N)
    virsh -q -c "$E2E_URI" metadata "$dom" "$uri" --live "$@" >/dev/null ||
        e2e_fail "$what: virsh metadata $* failed"
    e2e_until 10 sh -c 'tail -n +"$1" "$2" | grep -qF -- "$3"' _ "$((mark + 1))" "$E2E_DIR/hostd.log" "$pat" ||
        e2e_fail "$what: hostd did not log \"$pat\" within 10 s"
    line=$(tail -n +"$((mark + 1))" "$E2E_DIR/hostd.log" | grep -m1 -F -- "$pat")
    stamp=$(date -d "${line%% *}" +%s%3N) || e2e_fail "$what: no time stamp on hostd's line: $line"
    took=$((stamp - t0))
    [ "$took" -ge 0 ] || e2e_fail "$what: hostd's line is older than the command ($took ms): $line"
    e2e_log "$what: hostd logged it $took ms after virsh metadata"
    [ "$took" -le "$hostd_budget_ms" ] ||
        e2e_fail "$what: hostd took $took ms to see the change (budget $hostd_budget_ms ms: the next interval)"
    e2e_until 10 e2e_status_field a "$expr or exit(1)" ||
        e2e_fail "$what: not in /status within 10 s: settings $(field 'd["settings"]'), decision $(field 'd["decision"]')"
    e2e_log "ok: $what: in /status $(( $(date +%s%3N) - t0 )) ms after virsh metadata"
}

# --- opt out
change "opt_out=yes" "domain $dom: corehint metadata: opt_out yes" "d['settings']['opt_out'] and d['settings']['from'] == ['metadata'] and d['decision']['reason'] == 'opt-out' and d['decision']['count'] == 2" \
    --key corehint --set '<policy opt_out="yes"/>'
e2e_expect "the opted-out guest applies all its vCPUs" \
    e2e_until 20 e2e_status_field a "d['channel']['status']['applied'] == '0-1' or exit(1)"
e2e_expect "hostd logged the metadata once" \
    test "$(log_count "domain $dom: corehint metadata: opt_out yes")" = 1

# --- invalid: one warning, the defaults
change "invalid metadata" "domain $dom: corehint metadata ($uri) ignored: opt_out" "d['settings']['from'] == [] and 'opt_out' in d['settings'].get('metadata_error', '') and d['decision']['reason'] != 'opt-out'" \
    --key corehint --set '<policy opt_out="maybe" weight="2"/>'
e2e_expect "a shrinks again under the defaults" \
    e2e_until 20 e2e_status_field a "d['decision']['count'] == 1 or exit(1)"
# metadata of another namespace changes too (hostd reads the XML again): still no new warning
mark=$(wc -l <"$E2E_DIR/hostd.log")
virsh -q -c "$E2E_URI" metadata "$dom" http://example.org/other/1 --live --key other --set '<note text="x"/>' >/dev/null ||
    e2e_fail "virsh metadata of another namespace"
sleep $((4 * interval_ms / 1000))
e2e_expect "hostd read the XML again after the other namespace's change" \
    sh -c 'tail -n +"$1" "$2" | grep -q "$3"' _ "$((mark + 1))" "$E2E_DIR/hostd.log" "domain $dom ([0-9a-f-]*): metadata"
warned=$(log_count "domain $dom: corehint metadata ($uri) ignored: opt_out")
[ "$warned" = 1 ] || e2e_fail "invalid metadata: $warned warnings in 4+ intervals, want exactly 1: $(grep -F "domain $dom: corehint metadata" "$E2E_DIR/hostd.log" | tail -n 5 | tr '\n' '|')"
e2e_log "ok: one warning for the invalid element: $(grep -F "domain $dom: corehint metadata (" "$E2E_DIR/hostd.log" | sed 's/.*: corehint/corehint/')"
# another fault is another change: warned once more
change "a different fault" "domain $dom: corehint metadata ($uri) ignored: unknown attribute" "'unknown attribute' in d['settings'].get('metadata_error', '')" \
    --key corehint --set '<policy wieght="2"/>'
e2e_expect "the second fault warned once" \
    test "$(log_count "domain $dom: corehint metadata ($uri) ignored: unknown attribute \"wieght\"")" = 1

# --- weight
change "weight=3" "domain $dom: corehint metadata: weight 3" "d['settings'].get('weight') == 3 and d['settings']['from'] == ['metadata'] and d['decision']['weight'] == 3" \
    --key corehint --set '<policy weight="3"/>'
e2e_expect "a (weight 3) is entitled to more than b (weight 1)" \
    e2e_until 20 python3 - "$E2E_HOSTD_HTTP" "$dom" "$(e2e_domname b)" <<'EOF'
import json, sys, urllib.request
doc = json.load(urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/status", timeout=5))
d = {x["name"]: x["decision"] for x in doc["domains"]}
a, b = d[sys.argv[2]], d[sys.argv[3]]
print(f"a: weight {a['weight']} entitlement {a['entitlement']:.2f} count {a['count']}; "
      f"b: weight {b['weight']} entitlement {b['entitlement']:.2f} count {b['count']}", file=sys.stderr)
sys.exit(0 if a["contended"] and a["entitlement"] > b["entitlement"] + 0.2 else 1)
EOF

# --- a restarted hostd reads it back from the domain
kill "$E2E_HOSTD_PID"
wait "$E2E_HOSTD_PID" 2>/dev/null
e2e_start_hostd --interval-ms $interval_ms
e2e_expect "a new hostd takes the weight from the domain's metadata" \
    e2e_until 10 e2e_status_field a "d['settings'].get('weight') == 3 and d['settings']['from'] == ['metadata'] and d['decision']['weight'] == 3 or exit(1)"

# --- removed
change "metadata removed" "domain $dom: corehint metadata removed" "d['settings']['from'] == [] and 'weight' not in d['settings'] and d['decision']['weight'] == 1" \
    --remove
e2e_expect "hostd logged the removal once" \
    test "$(log_count "domain $dom: corehint metadata removed")" = 1
kill -0 "$E2E_HOSTD_PID" 2>/dev/null || e2e_fail "hostd died"
e2e_pass
