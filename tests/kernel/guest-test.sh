#!/bin/sh
# In-guest checks of the preferred CPU series. Runs as /ktest.sh under the
# test /init, in a qemu guest with 4 vCPUs booted with isolcpus=3, so CPU 3
# is active but not a housekeeping CPU, and user tasks are not affine to it.
# Booted with ktest=smt (2 cores of 2 threads, no isolcpus=) it runs the SMT
# checks only.
#
# Prints one line per check:  CHECK <name> PASS|FAIL <detail>
# and "KTEST DONE" at the end. The host runner knows the list of names and
# fails on any FAIL or any missing name.

P=/sys/devices/system/cpu/preferred
ONLINE=/sys/devices/system/cpu/online
STATS=/sys/kernel/debug/sched/preferred_stats
KUNIT=/sys/kernel/debug/kunit/steal_governor/results
MOD=/lib/modules/steal_governor.ko

pass() { echo "CHECK $1 PASS $2"; }
fail() { echo "CHECK $1 FAIL $2"; }
# check NAME CONDITION-STATUS DETAIL
check() {
	if [ "$2" = 0 ]; then pass "$1" "$3"; else fail "$1" "$3"; fi
}
info() { echo "INFO $*"; }

rd() { cat $P; }
# wr VALUE: write VALUE to the preferred file; status of the write, error
# text in $WERR.
wr() {
	WERR=$( { echo "$1" > $P; } 2>&1 )
}
stat_get() { awk -v n="$1" '$1 == n { print $2 }' $STATS; }
cpu_of() { awk '{ print $39 }' /proc/$1/stat; }
# centiseconds since boot
now_cs() { awk '{ split($1, t, "."); print t[1] * 100 + t[2] }' /proc/uptime; }
spin() { sh -c 'while :; do :; done' & }
# what the kernel log must never hold
BAD_DMESG='WARNING:|BUG:|kernel BUG|Oops|Call Trace|no longer affine'
# split NAME WHAT A B N: 10 samples 0.3 s apart of where the loops in $pids
# run; PASS if N run on CPU A and N on CPU B in at least 5 of them
split() {
	even=0; seen=
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		na=0; nb=0
		for p in $pids; do
			c=$(cpu_of $p)
			[ "$c" = "$3" ] && na=$((na + 1))
			[ "$c" = "$4" ] && nb=$((nb + 1))
		done
		seen="$seen $na/$nb"
		[ $na = "$5" ] && [ $nb = "$5" ] && even=$((even + 1))
		sleep 0.3
	done
	[ $even -ge 5 ]
	check "$1" $? "$2: $5/$5 on CPUs $3/$4 in $even of 10 samples:$seen"
}
# spread_2x2 NAME WHAT: the four loops in $pids run 2 on CPU 0 and 2 on CPU 1
spread_2x2() { split "$1" "$2" 0 1 2; }
# spin_on CPU: a busy loop started on CPU only, its pid in $!
spin_on() { taskset -c "$1" sh -c 'while :; do :; done' & }

# --- SMT boot (the runner's second boot: ktest=smt, 2 cores x 2 threads) ---
if grep -q 'ktest=smt' /proc/cmdline; then
	info "kernel $(uname -r)"
	t1=$(cat /sys/devices/system/cpu/cpu1/topology/thread_siblings_list)
	t3=$(cat /sys/devices/system/cpu/cpu3/topology/thread_siblings_list)
	[ "$t1" = 0-1 ] && [ "$t3" = 2-3 ]
	check smt_topology $? "thread siblings: cpu1 $t1, cpu3 $t3"
	# One thread of each core preferred, both busy: 3 loops on CPU 1 and 1
	# on CPU 3, then all allowed every CPU. Only core-level balancing can
	# even them out, and only a preferred CPU may run it for the core of
	# CPUs 2-3: its first CPU, 2, is not preferred.
	wr "1,3"
	pids=
	for c in 1 1 1 3; do spin_on $c; pids="$pids $!"; done
	sleep 0.5
	for p in $pids; do taskset -p f $p >/dev/null; done
	sleep 3
	split smt_busy_preferred_threads_balance "preferred=1,3, 3+1 loops started on CPUs 1/3" 1 3 2
	kill $pids; wait 2>/dev/null
	wr "0-3"
	bad=$(dmesg | grep -E -c "$BAD_DMESG")
	[ "$bad" = 0 ]; check smt_no_kernel_warnings $? "$bad suspicious dmesg lines"
	echo "KTEST DONE"
	exit 0
fi

info "kernel $(uname -r)"
info "online $(cat $ONLINE) isolated $(cat /sys/devices/system/cpu/isolated)"

# --- boot state --------------------------------------------------------------
[ -e $P ]; check preferred_file_exists $? "$P"
b=$(rd); o=$(cat $ONLINE)
[ "$b" = "$o" ] && [ "$b" = 0-3 ]; check boot_preferred_is_active $? "preferred=$b online=$o"

# --- KUnit (the runner also parses the console TAP) -------------------------
if [ -r $KUNIT ]; then
	nok=$(grep -c '^ *ok ' $KUNIT); nbad=$(grep -c 'not ok' $KUNIT)
	[ "$nbad" = 0 ] && [ "$nok" -ge 10 ]
	check kunit_results $? "ok=$nok not_ok=$nbad"
else
	fail kunit_results "$KUNIT missing"
fi

# --- canonical readback -------------------------------------------------------
wr "2,0,1"; s=$?; r=$(rd)
[ $s = 0 ] && [ "$r" = 0-2 ]; check write_subset_canonical $? "wrote 2,0,1 read $r"
wr "1,0"; s=$?; r=$(rd)
[ $s = 0 ] && [ "$r" = 0-1 ]; check write_subset_canonical2 $? "wrote 1,0 read $r"
wr "0-3"; s=$?; r=$(rd)
[ $s = 0 ] && [ "$r" = 0-3 ]; check write_all $? "wrote 0-3 read $r"

# --- pollers are told of every change (POLLPRI|POLLERR, as sysfs_notify) -----
# poll_start TIMEOUT_MS: a waiter on $P in the background, returning once it polls
poll_start() {
	rm -f /tmp/poll.out
	sysfs-poll $P "$1" > /tmp/poll.out 2>&1 &
	pw=$!
	i=0
	until grep -q '^ready' /tmp/poll.out 2>/dev/null || [ $i -ge 100 ]; do
		sleep 0.02; i=$((i + 1))
	done
	sleep 0.2 # from its "ready" line into poll()
}
# poll_end: wait for the waiter (not in a subshell: only this shell can), its last
# line in $r: "changed LIST", "timeout LIST" or an error
poll_end() { wait $pw; r=$(tail -n 1 /tmp/poll.out); }

poll_start 1000; poll_end
[ "$r" = "timeout 0-3" ]; check preferred_poll_quiet $? "nothing changed for 1 s: $r"
poll_start 5000; wr "0-1"; poll_end
[ "$r" = "changed 0-1" ]; check preferred_poll_write $? "wrote 0-1: $r"
poll_start 5000; echo 0 > /sys/devices/system/cpu/cpu1/online; poll_end
echo 1 > /sys/devices/system/cpu/cpu1/online; r2=$(rd)
[ "$r" = "changed 0" ]; check preferred_poll_hotplug $? "cpu1 offline while 0-1 preferred: $r (online again: $r2)"
wr "0-3"

# --- busy loops fold onto the preferred CPUs --------------------------------
# Start them with CPU 2 as the only preferred CPU, so that all four are
# on CPU 2 and each one has to be pushed off when the set moves to 0-1.
wr "2"
pids=
for _ in 1 2 3 4; do spin; pids="$pids $!"; done
sleep 1
where=; for p in $pids; do where="$where$(cpu_of $p),"; done
[ "$where" = "2,2,2,2," ]; check spinners_start_on_preferred $? "preferred=2: on CPUs $where"
p0=$(stat_get pushes); w0=$(stat_get wakeup_redirects); k0=$(stat_get balance_skips)
wr "0-1"
t0=$(now_cs); t=0
while :; do
	done_=0
	for p in $pids; do
		case $(cpu_of $p) in 0|1) ;; *) done_=1 ;; esac
	done
	t=$(( $(now_cs) - t0 ))
	[ $done_ = 0 ] || [ $t -gt 200 ] && break
	sleep 0.05
done
where=; for p in $pids; do where="$where$(cpu_of $p),"; done
[ $done_ = 0 ] && [ $t -le 200 ]; check spinners_fold_within_2s $? "after $((t * 10)) ms on CPUs $where"

# and they stay there
bad=0; seen=
for _ in 1 2 3 4 5 6 7 8 9 10; do
	for p in $pids; do
		c=$(cpu_of $p); seen="$seen$c"
		case $c in 0|1) ;; *) bad=$((bad + 1)) ;; esac
	done
	sleep 0.1
done
[ $bad = 0 ]; check spinners_stay_preferred $? "40 samples, $bad outside 0-1"

# and they share the two preferred CPUs: 2 on each, not 3+1 or 4+0
spread_2x2 spinners_spread "pushed onto 0-1"

# settled: nothing runs on a non-preferred CPU, so the tick has nothing to push
p_s=$(stat_get pushes); t_s=$(now_cs)
sleep 3
p_e=$(stat_get pushes); t_e=$(now_cs)
[ $((p_e - p_s)) -le 3 ]
check pushes_bounded_at_steady_state $? "$((p_e - p_s)) pushes in $(( (t_e - t_s) * 10 )) ms with the 4 loops settled on 0-1 (at most 3)"

# a few short-lived tasks to exercise wakeup/fork placement
for _ in 1 2 3 4 5 6 7 8 9 10; do sleep 0.02; done

# --- a task pinned to a non-preferred CPU stays there -----------------------
taskset -c 2 sh -c 'while :; do :; done' &
pin=$!
sleep 1
bad=0
for _ in 1 2 3 4 5; do
	[ "$(cpu_of $pin)" = 2 ] || bad=$((bad + 1))
	sleep 0.1
done
aff=$(taskset -p $pin | awk '{ print $NF }')
[ $bad = 0 ] && [ "$aff" = 4 ]; check pinned_task_stays $? "cpu=$(cpu_of $pin) mask=$aff misses=$bad"
kill $pin

# --- a real-time task on a non-preferred CPU is left alone -------------------
# Started on CPU 2, then allowed CPUs 0-2: the hint is for fair tasks only, so
# the tick push leaves it on CPU 2 (a busy loop never sleeps: no wakeup to steer).
# Widen only once chrt has made the loop SCHED_FIFO: a fair task allowed 0-2
# is pushed to a preferred CPU, as it must be, and a loaded host can take
# longer than any fixed sleep to get taskset -> chrt -> sh through exec.
taskset -c 2 chrt -f 10 sh -c 'while :; do :; done' &
rt=$!
t0=$(now_cs)
while [ "$(awk '{ print $41 }' /proc/$rt/stat)" != 1 ] && [ $(( $(now_cs) - t0 )) -lt 2000 ]; do
	sleep 0.05
done
sleep 0.2
taskset -p -c 0-2 $rt >/dev/null
sleep 1
bad=0; seen=
for _ in 1 2 3 4 5 6 7 8 9 10; do
	c=$(cpu_of $rt); seen="$seen$c"
	[ "$c" = 2 ] || bad=$((bad + 1))
	sleep 0.1
done
pol=$(awk '{ print $41 }' /proc/$rt/stat)
aff=$(taskset -p $rt | awk '{ print $NF }')
kill $rt
[ "$pol" = 1 ] && [ "$aff" = 7 ] && [ $bad = 0 ]
check rt_task_left_alone $? "SCHED_FIFO loop allowed 0-2 (mask $aff, policy $pol): CPUs $seen, $bad samples off CPU 2"

p1=$(stat_get pushes); w1=$(stat_get wakeup_redirects); k1=$(stat_get balance_skips)
kill $pids; wait 2>/dev/null

# --- tasks that may not use a preferred CPU are still balanced --------------
# Two loops allowed CPUs 1-2 only, both started on CPU 1, preferred=0: the
# hint cannot apply to them, so balancing must split them over 1 and 2.
wr "0"
pids=
for _ in 1 2; do spin_on 1; pids="$pids $!"; done
sleep 0.5
for p in $pids; do taskset -p -c 1,2 $p >/dev/null; done
sleep 2
split confined_nonpreferred_balance "preferred=0, 2 loops allowed 1-2" 1 2 1
kill $pids; wait 2>/dev/null

# The same in a cpuset partition of CPUs 1-2 (a root domain of its own
# without a preferred CPU).
CG=/sys/fs/cgroup
mkdir -p $CG
mount -t cgroup2 none $CG 2>/dev/null
part=
if echo +cpuset > $CG/cgroup.subtree_control && mkdir $CG/part &&
	echo 1-2 > $CG/part/cpuset.cpus && echo root > $CG/part/cpuset.cpus.partition; then
	part=$(cat $CG/part/cpuset.cpus.partition)
fi
if [ "$part" = root ]; then
	pids=
	for _ in 1 2; do
		# CPU 1 is outside the root cpuset now: in first, then onto CPU 1
		spin; p=$!; pids="$pids $p"
		echo $p > $CG/part/cgroup.procs; taskset -p -c 1 $p >/dev/null
	done
	sleep 0.5
	for p in $pids; do taskset -p -c 1,2 $p >/dev/null; done
	sleep 2
	split cpuset_partition_nonpreferred_balance "preferred=0, 2 loops in a partition of 1-2" 1 2 1
	kill $pids; wait 2>/dev/null
	echo member > $CG/part/cpuset.cpus.partition
	rmdir $CG/part
else
	fail cpuset_partition_nonpreferred_balance "could not make a cpuset partition of CPUs 1-2: '$part'"
fi
wr "0-3"
info "preferred_stats: $(tr '\n' ' ' < $STATS)"
[ $((p1 - p0)) -ge 4 ]; check stats_pushes $? "pushes +$((p1 - p0)) (4 spinners left CPU 2)"
[ $((w1 - w0)) -gt 0 ]; check stats_wakeup_redirects $? "wakeup_redirects +$((w1 - w0))"
[ $((k1 - k0)) -gt 0 ]; check stats_balance_skips $? "balance_skips +$((k1 - k0))"

# --- invalid writes: EINVAL, mask unchanged ---------------------------------
wr "0-2"
# expect_einval NAME VALUE
expect_einval() {
	before=$(rd)
	wr "$2"; s=$?; after=$(rd)
	case $WERR in *"Invalid argument"*) e=0 ;; *) e=1 ;; esac
	[ $s != 0 ] && [ $e = 0 ] && [ "$after" = "$before" ]
	check "$1" $? "wrote '$2' status=$s err='$WERR' mask $before -> $after"
}
expect_einval invalid_empty ""
expect_einval invalid_garbage "garbage"
expect_einval invalid_out_of_range "7"
expect_einval invalid_range_beyond "0-9"
expect_einval invalid_no_housekeeping "3"
echo 0 > /sys/devices/system/cpu/cpu2/online
expect_einval invalid_offline_cpu "0,2"
echo 1 > /sys/devices/system/cpu/cpu2/online

# --- hotplug -------------------------------------------------------------------
wr "0-2"
s=0; echo 0 > /sys/devices/system/cpu/cpu1/online || s=1; r=$(rd)
[ $s = 0 ] && [ "$r" = "0,2" ]; check hotplug_offline_removes $? "offline cpu1: preferred=$r"
s=0; echo 1 > /sys/devices/system/cpu/cpu1/online || s=1; r=$(rd)
[ $s = 0 ] && [ "$r" = "0-2" ]; check hotplug_online_adds $? "online cpu1: preferred=$r (requested: back in)"
# a CPU the written mask does not name stays out when it comes back
wr "0-1"
echo 0 > /sys/devices/system/cpu/cpu2/online; echo 1 > /sys/devices/system/cpu/cpu2/online; r=$(rd)
[ "$r" = "0-1" ]; check hotplug_keeps_request $? "preferred=0-1, cpu2 off and on line: preferred=$r"
wr "1"; r0=$(rd)
echo 0 > /sys/devices/system/cpu/cpu1/online; r=$(rd); o=$(cat $ONLINE)
[ "$r0" = 1 ] && [ "$r" = "$o" ]; check hotplug_last_preferred_falls_back $? "preferred=1, offline cpu1: preferred=$r online=$o"
echo 1 > /sys/devices/system/cpu/cpu1/online; r=$(rd)
[ "$r" = 1 ]; check hotplug_online_restores $? "online cpu1: preferred=$r (the request again)"
# writing every active CPU withdraws the request: a CPU that comes up joins
# (what guestd --restore writes on stop)
echo 0 > /sys/devices/system/cpu/cpu2/online
wr "$(cat $ONLINE)"; s=$?
echo 1 > /sys/devices/system/cpu/cpu2/online; r=$(rd)
[ $s = 0 ] && [ "$r" = 0-3 ]; check hotplug_all_written_follows $? "every active CPU written while cpu2 was offline, cpu2 online: preferred=$r"
wr "0-3"

# --- steal governor ---------------------------------------------------------
loaded() { grep -q '^steal_governor ' /proc/modules; }
# expect_refused NAME PARAMS...
expect_refused() {
	n=$1; shift
	insmod $MOD "$@" >/dev/null 2>&1; s=$?
	if loaded; then l=1; rmmod steal_governor; else l=0; fi
	[ $s != 0 ] && [ $l = 0 ]; check "$n" $? "insmod $* status=$s"
}
expect_refused governor_refuses_low_ge_high low_threshold=500 high_threshold=200
expect_refused governor_refuses_low_eq_high low_threshold=300 high_threshold=300
expect_refused governor_refuses_short_interval interval_ms=99
expect_refused governor_refuses_high_100pct high_threshold=10000

wr "0-1"
insmod $MOD interval_ms=100; s=$?; r=$(rd)
loaded && [ $s = 0 ] && [ "$r" = 0-3 ]; check governor_loads_resets_mask $? "status=$s preferred=$r"
wr "0-1"; s=$?; r=$(rd)
case $WERR in *"busy"*) e=0 ;; *) e=1 ;; esac
[ $s != 0 ] && [ $e = 0 ] && [ "$r" = 0-3 ]; check governor_owns_mask_ebusy $? "status=$s err='$WERR' preferred=$r"
sleep 1
r=$(rd)
# TCG guests have no steal clock: steal stays 0, so the governor holds all CPUs.
[ "$r" = 0-3 ]; check governor_no_steal_keeps_all $? "steal=$(awk '/^cpu / { print $9 }' /proc/stat) preferred=$r"
echo 0 > /sys/devices/system/cpu/cpu2/online; r=$(rd)
echo 1 > /sys/devices/system/cpu/cpu2/online; r2=$(rd)
[ "$r" = "0-1,3" ] && [ "$r2" = 0-3 ]; check governor_hotplug $? "offline cpu2: $r, online: $r2"
rmmod steal_governor; s=$?; r=$(rd); o=$(cat $ONLINE)
! loaded && [ $s = 0 ] && [ "$r" = "$o" ]; check governor_unload_restores_active $? "status=$s preferred=$r online=$o"
wr "0-1"; s=$?; r=$(rd)
[ $s = 0 ] && [ "$r" = 0-1 ]; check userspace_owns_after_unload $? "status=$s preferred=$r"
wr "0-3"

# --- the governor under injected steal -------------------------------------
# TCG has no steal clock; the test kernel's debugfs steal injection
# (CONFIG_SCHED_STEAL_INJECT) accounts written steal at its CPU's next ticks,
# so sg_update() and sg_apply() act as they would under real steal.
SI=/sys/kernel/debug/sched/steal_inject
cpu_steal() { awk -v c="cpu$1" '$1 == c { print $9 }' /proc/stat; }
# si_wr LINE: write LINE to the injection file; the write's status
si_wr() { { echo "$1" > $SI; } 2>/dev/null; }
# watch_masks FROM SECONDS: FROM (the mask before the watch), then each new mask
# seen in SECONDS as MASK@CS, CS its first sighting in centiseconds since boot.
# Sampled every 0.05 s without forking (read builtins), so a sighting lags its
# change by little more than that.
watch_masks() {
	last=$1; seen=$1
	read -r up _ < /proc/uptime; end=$(( ${up%.*}${up#*.} + $2 * 100 ))
	while :; do
		read -r up _ < /proc/uptime; t=${up%.*}${up#*.}
		[ "$t" -lt $end ] || break
		read -r r < $P
		[ "$r" != "$last" ] && seen="$seen $r@$t" && last=$r
		sleep 0.05
	done
	echo "$seen"
}
masks_of() { echo "$1" | sed 's/@[0-9]*//g'; }
# min_gap LIST: the shortest time between two sightings in LIST, in centiseconds
min_gap() {
	echo "$1" | tr ' ' '\n' | awk -F@ 'NF == 2 { if (p != "") { g = $2 - p; if (m == "" || g < m) m = g } p = $2 }
		END { print (m == "" ? 0 : m) }'
}
s0=$(cpu_steal 2)
si_wr "2 300000000"; s=$?
sleep 0.5
s1=$(cpu_steal 2); s3=$(cpu_steal 3)
# 300 ms is 30 USER_HZ ticks of steal on CPU 2 and none on CPU 3
[ $s = 0 ] && [ $((s1 - s0)) -ge 29 ] && [ $((s1 - s0)) -le 31 ] && [ "$s3" = 0 ]
check steal_inject_accounted $? "write status=$s: cpu2 steal $s0 -> $s1, cpu3 steal $s3 (USER_HZ ticks)"
si_wr "0-3"; s1=$?
si_wr "9 1000"; s2=$?
[ -w $SI ] && [ $s1 != 0 ] && [ $s2 != 0 ]; check steal_inject_refuses_bad_input $? "no amount: status=$s1, absent cpu 9: status=$s2"

# 40 % steal on every CPU, then none: one core less per interval down to the
# anchor CPU, then one more per interval back to every CPU.
# Each step comes an interval after the one before: seen at least 600 ms apart
# with a 1 s interval (room for sightings late by up to 0.4 s, while two steps
# in one interval would be 500 ms apart at most), all three within 5 s.
insmod $MOD interval_ms=1000
m0=$(rd)
poll_start 5000
( while echo "0-3 40000000" > $SI; do sleep 0.1; done ) &
inj=$!
shrink=$(watch_masks "$m0" 5)
poll_end
kill $inj; wait $inj 2>/dev/null
grow=$(watch_masks "$(rd)" 5)
rmmod steal_governor
[ "$(masks_of "$shrink")" = "0-3 0-2 0-1 0" ] && [ "$(min_gap "$shrink")" -ge 60 ]
check governor_steal_shrinks_one_core_per_interval $? "40% steal, 1 s interval: $shrink (mask@cs), closest steps $(min_gap "$shrink") cs apart"
[ "$(masks_of "$grow")" = "0 0-1 0-2 0-3" ] && [ "$(min_gap "$grow")" -ge 60 ]
check governor_steal_gone_grows_one_core_per_interval $? "no steal: $grow (mask@cs), closest steps $(min_gap "$grow") cs apart"
case $r in "changed 0-2"|"changed 0-1"|"changed 0") e=0 ;; *) e=1 ;; esac
check preferred_poll_governor $e "a poller while the governor shrank the mask: $r"

# --- hotplug while CPU-bound tasks run and get pushed -----------------------
cycle() { # CPU...: offline then online each, with the spinners running
	for c in "$@"; do echo 0 > /sys/devices/system/cpu/cpu$c/online || return 1; done
	for c in "$@"; do echo 1 > /sys/devices/system/cpu/cpu$c/online || return 1; done
}
alive() { n=0; for p in $pids; do kill -0 $p 2>/dev/null && n=$((n + 1)); done; echo $n; }
wr "0,2"
pids=
for _ in 1 2 3 4; do spin; pids="$pids $!"; done
ok=0
for _ in 1 2 3 4 5 6 7 8 9 10; do cycle 2 1 || ok=1; done
r=$(rd); a=$(alive)
[ $ok = 0 ] && [ "$r" = 0,2 ] && [ "$a" = 4 ]
check hotplug_stress_userspace $? "10 cycles of cpu2+cpu1: status=$ok preferred=$r spinners alive=$a"
insmod $MOD interval_ms=100
ok=0
for _ in 1 2 3 4 5; do cycle 1 2 || ok=1; sleep 0.1; done
r=$(rd); o=$(cat $ONLINE); a=$(alive)
rmmod steal_governor
[ $ok = 0 ] && [ "$r" = "$o" ] && [ "$a" = 4 ]
check hotplug_stress_governor $? "5 cycles of cpu1+cpu2 under the governor: status=$ok preferred=$r online=$o alive=$a"
kill $pids; wait 2>/dev/null

# CPU 3 is alone in its isolcpus= root domain. 6.12 refuses to offline it
# (EBUSY from the deadline bandwidth check in sched_cpu_deactivate()); the
# failed deactivation must put the CPU back into the preferred set. If the
# kernel allows it, it must come back on online like any other CPU.
wr "0,3"
e=$( { echo 0 > /sys/devices/system/cpu/cpu3/online; } 2>&1 ); s=$?
if [ $s != 0 ]; then
	r=$(rd); o=$(cat $ONLINE)
	[ "$r" = "0,3" ] && [ "$o" = 0-3 ]
	check hotplug_failed_offline_keeps_preferred $? "offline cpu3 refused ($e): preferred=$r online=$o"
else
	echo 1 > /sys/devices/system/cpu/cpu3/online; r=$(rd)
	[ "$r" = "0,3" ]
	check hotplug_failed_offline_keeps_preferred $? "offline cpu3 allowed, online again: preferred=$r"
fi
wr "0-3"

# --- busy loops started on a 2-CPU preferred set share it -------------------
wr "0-1"
pids=
for _ in 1 2 3 4; do spin; pids="$pids $!"; done
sleep 3
spread_2x2 spinners_forked_spread "started with preferred=0-1"
kill $pids; wait 2>/dev/null

# --- random masks written while CPUs go off and on line ---------------------
# The hint must never leave a task without a CPU: no BUG() in
# select_fallback_rq(), no affinity reset ("no longer affine"), every task
# alive. CPU-bound loops get pushed, short sleepers wake up all the time,
# CPUs 1 and 2 go off and on line, and the mask is rewritten at random
# (a fixed-seed generator: every run writes the same sequence).
wr "0-3"
pids=
for _ in 1 2 3 4; do spin; pids="$pids $!"; done
for _ in 1 2 3; do sh -c 'while :; do usleep 300; done' & pids="$pids $!"; done
rm -f /tmp/hotplug.stop /tmp/hotplug.n
(
	n=0
	while [ ! -e /tmp/hotplug.stop ]; do
		for c in 1 2; do
			echo 0 > /sys/devices/system/cpu/cpu$c/online 2>/dev/null
			echo 1 > /sys/devices/system/cpu/cpu$c/online 2>/dev/null
		done
		n=$((n + 1)); echo $n > /tmp/hotplug.n
	done
) &
hp=$!
seed=12345; i=0; acc=0; rej=0; t0=$(now_cs)
while :; do
	seed=$(( (seed * 1103515245 + 12345) % 2147483648 ))
	m=$(( (seed >> 16) % 15 + 1 )); l=
	for c in 0 1 2 3; do
		[ $(( (m >> c) & 1 )) = 1 ] && l="$l${l:+,}$c"
	done
	if echo "$l" > $P 2>/dev/null; then acc=$((acc + 1)); else rej=$((rej + 1)); fi
	i=$((i + 1))
	[ $((i % 50)) = 0 ] || continue # the checks below fork: not every round
	n=$(cat /tmp/hotplug.n 2>/dev/null || echo 0)
	[ $i -ge 500 ] && [ "$n" -ge 20 ] && break
	[ $(( $(now_cs) - t0 )) -gt 9000 ] && break
done
touch /tmp/hotplug.stop; wait $hp
n=$(cat /tmp/hotplug.n 2>/dev/null || echo 0)
for c in 1 2; do echo 1 > /sys/devices/system/cpu/cpu$c/online 2>/dev/null; done
wr "0-3"; r=$(rd); a=$(alive)
kill $pids; wait 2>/dev/null
bad=$(dmesg | grep -E -c "$BAD_DMESG")
[ $i -ge 500 ] && [ "$n" -ge 20 ] && [ $acc -ge 100 ] && [ "$a" = 7 ] && [ "$r" = 0-3 ] && [ "$bad" = 0 ]
check hotplug_write_stress $? "$i masks written ($acc accepted, $rej refused) during $n hotplug cycles of cpu1+cpu2 in $(( ($(now_cs) - t0) / 100 )) s: tasks alive=$a/7 preferred=$r, $bad bad dmesg lines"

# --- kernel log --------------------------------------------------------------
bad=$(dmesg | grep -E -c "$BAD_DMESG")
[ "$bad" = 0 ]; check no_kernel_warnings $? "$bad suspicious dmesg lines"
[ "$bad" = 0 ] || dmesg | grep -E -A20 "$BAD_DMESG" | head -60

echo "KTEST DONE"
