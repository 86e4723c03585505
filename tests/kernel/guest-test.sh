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
# stat_val NAME: the same in $sv, without starting a program
stat_val() { sv=; while read -r _k _v; do [ "$_k" = "$1" ] && sv=$_v && break; done < $STATS; }
cpu_of() { awk '{ print $39 }' /proc/$1/stat; }
# centiseconds since boot
now_cs() { awk '{ split($1, t, "."); print t[1] * 100 + t[2] }' /proc/uptime; }
spin() { sh -c 'while :; do :; done' & }
# what the kernel log must never hold
BAD_DMESG='WARNING:|BUG:|kernel BUG|Oops|Call Trace|no longer affine'

# Time. qemu's TCG vCPUs are host threads, on a host that may be busy with
# other work: a vCPU can stop for seconds while the guest's clock runs on.
# So a check waits for what it expects with a generous deadline (most waits
# end at once), and a window in which something must not happen is measured
# in the guest CPUs' own ticks, not in seconds: with CONFIG_HZ_PERIODIC every
# CPU, busy or idle, accounts each tick it takes to user .. softirq in
# /proc/stat, and a vCPU the host does not run takes none. (Steal is left out:
# a tick that accounts injected steal at least as long as itself accounts
# nothing else.)
# The waits and samples below run no programs (read builtins), so that they
# measure only what they mean to: before 0017 exec balancing did not know the
# preferred CPUs (sched_exec() calls the class's select_task_rq() directly),
# and every program started moved to an idle CPU, often CPU 2, and was counted
# in pushes when the tick found it there (exec_stays_preferred checks it).
# up_cs: in $now, centiseconds since boot
up_cs() { read -r _up _ < /proc/uptime; now=${_up%.*}${_up#*.}; }
# deadline SECONDS: from now on, past is true once SECONDS have gone by
deadline() { up_cs; DL=$((now + $1 * 100)); }
past() { up_cs; [ $now -ge $DL ]; }
# nap SECONDS: sleep without starting a program: a read that times out on a
# FIFO nobody writes to (sleep where that cannot be made)
if mkfifo /tmp/nap && exec 9<>/tmp/nap; then
	# shellcheck disable=SC3045 # busybox ash's read has -t
	nap() { read -r -t "$1" _ <&9; }
else
	nap() { sleep "$1"; }
fi
# tick_read: each online CPU's ticked time so far, in centiseconds, in
# tc0..tc3, the part of it with a task running (user, nice, system, irq,
# softirq) in tb0..tb3, and its steal time (cs) in ts0..ts3
# shellcheck disable=SC2034 # the variables are read by name through eval (snap, since)
tick_read() {
	tc0=0; tc1=0; tc2=0; tc3=0; tb0=0; tb1=0; tb2=0; tb3=0; ts0=0; ts1=0; ts2=0; ts3=0
	{
		read -r _
		while read -r _n _u _ni _sy _id _io _irq _si _st _; do
			case $_n in cpu[0-3]) ;; *) break ;; esac
			eval "tb${_n#cpu}=\$((_u + _ni + _sy + _irq + _si)) tc${_n#cpu}=\$((_u + _ni + _sy + _id + _io + _irq + _si)) ts${_n#cpu}=\$_st"
			[ "$_n" = cpu3 ] && break
		done
	} < /proc/stat
}
# snap NAME: copy tc0..tc3 to NAME0..NAME3
snap() { eval "${1}0=\$tc0 ${1}1=\$tc1 ${1}2=\$tc2 ${1}3=\$tc3"; }
# since A B CPUS: in $tk, the least of A<c> - B<c> for the CPUs c in CPUS
since() {
	tk=
	for _c in $3; do
		eval "_d=\$(( $1$_c - $2$_c ))"
		# shellcheck disable=SC2154 # _d is set by the eval above
		[ -z "$tk" ] || [ $_d -lt $tk ] && tk=$_d
	done
}
# tick_mark: start a window; ticked CPUS: in $tk, the least time (cs) any CPU
# in CPUS (e.g. "0 1 2") has ticked since the mark
tick_mark() { tick_read; snap tm; }
ticked() { tick_read; since tc tm "$1"; }
# locate PID...: in $where, the CPU each one runs on, "C,C,...,"
locate() {
	where=
	for _p in "$@"; do
		if { read -r _l < /proc/$_p/stat; } 2>/dev/null; then
			set -- $_l; shift 38; where="$where$1,"
		else
			where="$where?,"
		fi
	done
}
# aff_of PID: the CPUs PID may run on, as a list ("1", "0-2"), in $aff
aff_of() {
	aff=
	while read -r _k _v; do
		[ "$_k" = Cpus_allowed_list: ] && aff=$_v && break
	done < /proc/$1/status
}
# wait_affine PID LIST: wait (at most 20 s) until PID may run on LIST only, e.g.
# once "taskset -c LIST cmd" has set its mask (it execs cmd after that)
wait_affine() {
	deadline 20
	until aff_of $1; [ "$aff" = "$2" ] || past; do nap 0.05; done
}
# on_cpus A B: in $na and $nb, how many of the loops in $pids run on CPU A and on CPU B
on_cpus() {
	na=0; nb=0
	locate $pids
	_w=$where
	while [ -n "$_w" ]; do
		_c=${_w%%,*}; _w=${_w#*,}
		[ "$_c" = "$1" ] && na=$((na + 1))
		[ "$_c" = "$2" ] && nb=$((nb + 1))
	done
}
# split NAME WHAT A B N: wait (at most 20 s) until N of the loops in $pids run
# on CPU A and N on CPU B, then 10 samples 0.3 s apart of where they run; PASS
# if they are split so in at least 5 of them
split() {
	deadline 20; t0=$now
	until on_cpus "$3" "$4"; [ $na = "$5" ] && [ $nb = "$5" ]; do
		past && break
		nap 0.1
	done
	up_cs; settle=$((now - t0))
	even=0; seen=
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		on_cpus "$3" "$4"
		seen="$seen $na/$nb"
		[ $na = "$5" ] && [ $nb = "$5" ] && even=$((even + 1))
		nap 0.3
	done
	[ $even -ge 5 ]
	check "$1" $? "$2: $5/$5 on CPUs $3/$4 in $even of 10 samples, first after $((settle * 10)) ms:$seen"
}
# spread_2x2 NAME WHAT: the four loops in $pids run 2 on CPU 0 and 2 on CPU 1
spread_2x2() { split "$1" "$2" 0 1 2; }
# spin_on CPU: a busy loop started on CPU only, its pid in $!
spin_on() { taskset -c "$1" sh -c 'while :; do :; done' & }
# window CPUS CS MIN SAMPLE...: run SAMPLE (a command that counts what is wrong
# in $bad and notes what it saw in $seen) every 0.1 s until every CPU in CPUS
# has ticked CS centiseconds and SAMPLE ran MIN times, for at most 20 s; the
# samples taken in $n, the least time ticked in $tk
window() {
	_cpus=$1; _cs=$2; _min=$3; shift 3
	n=0; bad=0; seen=; tick_mark; deadline 20
	while :; do
		"$@"; n=$((n + 1))
		ticked "$_cpus"
		[ $n -ge $_min ] && [ $tk -ge $_cs ] && break
		past && break
		nap 0.1
	done
}
# on_cpu CPU PID: a sample for window: PID runs on CPU
on_cpu() { locate $2; seen="$seen${where%,}"; [ "$where" = "$1," ] || bad=$((bad + 1)); }
# on_0_1: a sample for window: every loop in $pids runs on CPU 0 or 1
on_0_1() {
	locate $pids; seen="$seen ${where%,}"
	case $where in *2*|*3*|*\?*) bad=$((bad + 1)) ;; esac
}

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
	for c in 1 1 1 3; do spin_on $c; pids="$pids $!"; wait_affine $! $c; done
	for p in $pids; do taskset -p f $p >/dev/null; done
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
poll_start 20000; wr "0-1"; poll_end
[ "$r" = "changed 0-1" ]; check preferred_poll_write $? "wrote 0-1: $r"
poll_start 20000; echo 0 > /sys/devices/system/cpu/cpu1/online; poll_end
echo 1 > /sys/devices/system/cpu/cpu1/online; r2=$(rd)
[ "$r" = "changed 0" ]; check preferred_poll_hotplug $? "cpu1 offline while 0-1 preferred: $r (online again: $r2)"
wr "0-3"

# --- busy loops fold onto the preferred CPUs --------------------------------
# Start them with CPU 2 as the only preferred CPU, so that all four are
# on CPU 2 and each one has to be pushed off when the set moves to 0-1.
wr "2"
pids=
for _ in 1 2 3 4; do spin; pids="$pids $!"; done
# placed on CPU 2 at fork: wait (at most 20 s) until all four run there in two
# samples in a row
deadline 20; ok=0
while :; do
	locate $pids
	if [ "$where" = "2,2,2,2," ]; then ok=$((ok + 1)); else ok=0; fi
	[ $ok -ge 2 ] || past && break
	nap 0.1
done
[ $ok -ge 2 ]; check spinners_start_on_preferred $? "preferred=2: on CPUs $where"
p0=$(stat_get pushes); w0=$(stat_get wakeup_redirects); k0=$(stat_get balance_skips)
# Each tick of CPU 2 pushes the loop it runs: wait (at most 30 s) until all four
# run on 0-1, and count CPU 2's busy time meanwhile, its ticks with a task on
# it: a few should do, 1 s of them is the limit. Once the loops are gone it is
# idle and adds next to nothing, however late this loop sees them gone.
tick_read; b0=$tb2
wr "0-1"
deadline 30; t0=$now
while :; do
	locate $pids
	case $where in *2*|*3*|*\?*) out=1 ;; *) out=0 ;; esac
	[ $out = 0 ] || past && break
	nap 0.05
done
up_cs; t=$((now - t0)); tick_read; b=$((tb2 - b0))
[ $out = 0 ] && [ $b -le 100 ]
check spinners_fold_promptly $? "on CPUs $where after $((t * 10)) ms, CPU 2 busy for $((b * 10)) ms of its ticks meanwhile (at most 1000)"

# and they stay there: sampled for 1 s of CPUs 0-2's ticks
window "0 1 2" 100 10 on_0_1
[ $bad = 0 ] && [ $tk -ge 100 ]
check spinners_stay_preferred $? "$n samples in $((tk * 10)) ms of CPUs 0-2's ticks (at least 1000), $bad with a loop outside 0-1:$seen"

# and they share the two preferred CPUs: 2 on each, not 3+1 or 4+0
spread_2x2 spinners_spread "pushed onto 0-1"

# settled: nothing runs on a non-preferred CPU, so the tick has nothing to push,
# for 3 s of CPUs 0-2's ticks (at most 30 s): the loops' CPUs, where a pull
# starts, and CPU 2, where a loop pulled there would be pushed back
stat_val pushes; p_s=$sv; tick_mark; deadline 30; t_s=$now
until ticked "0 1 2"; [ $tk -ge 300 ] || past; do nap 0.2; done
stat_val pushes; p_e=$sv; up_cs; t_e=$now
[ $tk -ge 300 ] && [ $((p_e - p_s)) -le 3 ]
check pushes_bounded_at_steady_state $? "$((p_e - p_s)) pushes (at most 3) in $((tk * 10)) ms of CPUs 0-2's ticks (at least 3000; $(( (t_e - t_s) * 10 )) ms of uptime) with the 4 loops settled on 0-1"

# --- exec follows the hint ---------------------------------------------------
# 300 programs started one after another (each a fork and an exec of busybox)
# while the four loops keep the preferred CPUs 0-1 busy and CPU 2 is idle: the
# fork lands on a preferred CPU (select_task_rq()), and exec balancing
# (sched_exec(), find_idlest_group()) must not move the new program to the idle
# non-preferred CPU 2. Measured in CPU 2's busy ticks (each tick that found a
# task there) and in pushes (each such task the tick pushed back).
tick_read; b0=$tb2; stat_val pushes; p_x=$sv; up_cs; t_x=$now
i=0; while [ $i -lt 300 ]; do /bin/true; i=$((i + 1)); done
tick_read; b=$((tb2 - b0)); stat_val pushes; p=$((sv - p_x)); up_cs
[ $b -le 5 ] && [ $p -le 5 ]
check exec_stays_preferred $? "300 execs in $(( (now - t_x) * 10 )) ms with CPUs 0-1 busy: CPU 2 busy for $((b * 10)) ms of its ticks (at most 50), $p pushes (at most 5)"

# a few short-lived tasks to exercise wakeup/fork placement
for _ in 1 2 3 4 5 6 7 8 9 10; do sleep 0.02; done

# --- a task pinned to a non-preferred CPU stays there -----------------------
# Sampled for 1 s of CPU 2's ticks (each one a push it must not make) once
# taskset has set the mask.
taskset -c 2 sh -c 'while :; do :; done' &
pin=$!
wait_affine $pin 2
window 2 100 5 on_cpu 2 $pin
aff=$(taskset -p $pin | awk '{ print $NF }')
[ $bad = 0 ] && [ "$aff" = 4 ] && [ $tk -ge 100 ]
check pinned_task_stays $? "cpu=$(cpu_of $pin) mask=$aff misses=$bad of $n samples in $((tk * 10)) ms of CPU 2's ticks (at least 1000)"
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
# sampled for 2 s of CPU 2's ticks
window 2 200 10 on_cpu 2 $rt
pol=$(awk '{ print $41 }' /proc/$rt/stat)
aff=$(taskset -p $rt | awk '{ print $NF }')
kill $rt
[ "$pol" = 1 ] && [ "$aff" = 7 ] && [ $bad = 0 ] && [ $tk -ge 200 ]
check rt_task_left_alone $? "SCHED_FIFO loop allowed 0-2 (mask $aff, policy $pol): CPUs $seen, $bad of $n samples off CPU 2 in $((tk * 10)) ms of its ticks (at least 2000)"

p1=$(stat_get pushes); w1=$(stat_get wakeup_redirects); k1=$(stat_get balance_skips)
kill $pids; wait 2>/dev/null

# --- tasks that may not use a preferred CPU are still balanced --------------
# Two loops allowed CPUs 1-2 only, both started on CPU 1, preferred=0: the
# hint cannot apply to them, so balancing must split them over 1 and 2.
wr "0"
pids=
for _ in 1 2; do spin_on 1; pids="$pids $!"; wait_affine $! 1; done
for p in $pids; do taskset -p -c 1,2 $p >/dev/null; done
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
	for p in $pids; do taskset -p -c 1,2 $p >/dev/null; done
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
# 1 s of every CPU's ticks: ten intervals
tick_mark; deadline 20
until ticked "0 1 2 3"; [ $tk -ge 100 ] || past; do nap 0.1; done
r=$(rd)
# TCG guests have no steal clock: steal stays 0, so the governor holds all CPUs.
[ "$r" = 0-3 ] && [ $tk -ge 100 ]
check governor_no_steal_keeps_all $? "steal=$(awk '/^cpu / { print $9 }' /proc/stat) preferred=$r after $((tk * 10)) ms of every CPU's ticks (at least 1000)"
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
# si_wr LINE: write LINE to the injection file; the write's status
si_wr() { { echo "$1" > $SI; } 2>/dev/null; }
# watch_masks FINAL: follow the mask from now until it has been FINAL for 1.2 s
# of every CPU's ticks (more than an interval: it must hold), for at most 20 s.
# In $seen: the mask at the start, then each new mask as MASK@CS, CS its first
# sighting in centiseconds since boot. Sampled every 0.05 s without forking
# (read builtins). A step came after the last sample that did not show it and
# before the one that did, which bounds the time between two steps both ways
# however late the samples come:
#   $near:  of "at most this far apart" (cs of uptime), the least: two steps in
#           one interval show under 60 (an interval, 100, is their least)
#   $far:   of "at least this far apart" in ticks (cs; the least any CPU
#           ticked), the most: a skipped interval shows over 150 (an interval
#           of the governor's timer is 100 of the ticks of its CPU and of
#           CPU 0, whose ticks count the jiffies)
#   $first: "at least this long" from the start to the first step, in ticks:
#           at most 250 (two intervals: the first one may have begun before
#           what the governor reacts to)
watch_masks() {
	near=; far=0; first=999; pl=; hold=
	deadline 20
	read -r up _ < /proc/uptime; lt=${up%.*}${up#*.}
	tick_read; snap ws; snap la
	read -r last < $P; seen=$last
	while :; do
		read -r up _ < /proc/uptime; t=${up%.*}${up#*.}
		tick_read; snap ca
		read -r _m < $P
		read -r up _ < /proc/uptime; t2=${up%.*}${up#*.}
		tick_read
		if [ "$_m" != "$last" ]; then
			seen="$seen $_m@$t2"; last=$_m
			if [ -n "$pl" ]; then
				[ -z "$near" ] || [ $((t2 - pl)) -lt $near ] && near=$((t2 - pl))
				since la ps "0 1 2 3"; [ $tk -gt $far ] && far=$tk
			else
				since la ws "0 1 2 3"; first=$tk
			fi
			pl=$lt; snap ps; hold=
		fi
		if [ "$_m" = "$1" ]; then
			[ -n "$hold" ] || { snap fs; hold=1; }
			since tc fs "0 1 2 3"; [ $tk -ge 120 ] && break
		fi
		past && break
		lt=$t; eval "la0=\$ca0 la1=\$ca1 la2=\$ca2 la3=\$ca3"
		nap 0.05
	done
	near=${near:-0}
}
masks_of() { echo "$1" | sed 's/@[0-9]*//g'; }
# The 300 ms are accounted at CPU 2's next tick: wait for them (at most 20 s),
# then for 0.2 s more of CPU 2's and CPU 3's ticks, in which nothing more may
# come: a second accounting of the same steal, or any of it on CPU 3.
tick_read; s0=$ts2; s30=$ts3
si_wr "2 300000000"; s=$?
deadline 20
until tick_read; [ $((ts2 - s0)) -ge 29 ] || past; do nap 0.05; done
tick_mark; deadline 20
until ticked "2 3"; [ $tk -ge 20 ] || past; do nap 0.05; done
s1=$ts2; s3=$ts3
# 300 ms is 30 USER_HZ ticks of steal on CPU 2 and none on CPU 3
[ $s = 0 ] && [ $((s1 - s0)) -ge 29 ] && [ $((s1 - s0)) -le 31 ] && [ $((s3 - s30)) = 0 ] && [ $tk -ge 20 ]
check steal_inject_accounted $? "write status=$s: cpu2 steal $s0 -> $s1, cpu3 steal $s30 -> $s3 (USER_HZ ticks), the last $((tk * 10)) ms of their ticks included (at least 200)"
si_wr "0-3"; s1=$?
si_wr "9 1000"; s2=$?
[ -w $SI ] && [ $s1 != 0 ] && [ $s2 != 0 ]; check steal_inject_refuses_bad_input $? "no amount: status=$s1, absent cpu 9: status=$s2"

# 40 % steal on every CPU, then none: one core less per interval down to the
# anchor CPU, then one more per interval back to every CPU.
# Each step comes an interval after the one before (see watch_masks).
insmod $MOD interval_ms=1000
poll_start 20000
( while echo "0-3 40000000" > $SI; do sleep 0.1; done ) &
inj=$!
watch_masks 0
shrink=$seen; s_near=$near; s_far=$far; s_first=$first
poll_end; polled=$r
kill $inj; wait $inj 2>/dev/null
watch_masks 0-3
rmmod steal_governor
[ "$(masks_of "$shrink")" = "0-3 0-2 0-1 0" ] && [ $s_near -ge 60 ] && [ $s_far -le 150 ] && [ $s_first -le 250 ]
check governor_steal_shrinks_one_core_per_interval $? "40% steal, 1 s interval: $shrink (mask@cs); steps at most $s_near cs apart at the closest (at least 60), at least $s_far cs of ticks at the farthest (at most 150), the first after at least $s_first (at most 250)"
[ "$(masks_of "$seen")" = "0 0-1 0-2 0-3" ] && [ $near -ge 60 ] && [ $far -le 150 ] && [ $first -le 250 ]
check governor_steal_gone_grows_one_core_per_interval $? "no steal: $seen (mask@cs); steps at most $near cs apart at the closest (at least 60), at least $far cs of ticks at the farthest (at most 150), the first after at least $first (at most 250)"
case $polled in "changed 0-2"|"changed 0-1"|"changed 0") e=0 ;; *) e=1 ;; esac
check preferred_poll_governor $e "a poller while the governor shrank the mask: $polled"

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
