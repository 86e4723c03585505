#!/bin/sh
# In-guest half of tests/kernel/spread-bench: rt-tests hackbench with the preferred set
# written to each mask in turn, several runs each. Parameters come from the kernel
# command line: spread.masks=0-1,0-3 (',' between masks, '+' inside one: 0+2 is "0,2"),
# spread.runs=3, spread.groups=4, spread.loops=100.
#
# One line per run:
#   SPREAD mask=0-1 run=1 time=12.345 busy=0.48,0.47,0.03,0.02 pushes=12 redirects=345
# time is hackbench's own "Time:" in seconds; busy the share of the run's busy CPU time
# (user+nice+system+irq+softirq in /proc/stat) each CPU had; pushes and redirects the
# increase of the preferred_stats counters during the run. "SPREAD DONE" at the end,
# "SPREAD ERROR ..." for anything that went wrong.

P=/sys/devices/system/cpu/preferred
STATS=/sys/kernel/debug/sched/preferred_stats

masks=0-1 runs=3 groups=4 loops=100
for kv in $(cat /proc/cmdline); do
	case $kv in
	spread.masks=*) masks=${kv#spread.masks=} ;;
	spread.runs=*) runs=${kv#spread.runs=} ;;
	spread.groups=*) groups=${kv#spread.groups=} ;;
	spread.loops=*) loops=${kv#spread.loops=} ;;
	esac
done

busy() { awk '/^cpu[0-9]/ { print $1, $2 + $3 + $4 + $7 + $8 }' /proc/stat; }
stat_get() { awk -v n="$1" '$1 == n { print $2 }' $STATS 2>/dev/null || echo 0; }

echo "SPREAD INFO kernel $(uname -r) online $(cat /sys/devices/system/cpu/online)"
for mask in $(echo "$masks" | tr ',' ' '); do
	m=$(echo "$mask" | tr '+' ',')
	if ! echo "$m" > $P; then
		echo "SPREAD ERROR cannot write $m to $P"
		continue
	fi
	for run in $(seq 1 "$runs"); do
		busy > /tmp/b0
		p0=$(stat_get pushes); w0=$(stat_get wakeup_redirects)
		out=$(hackbench -g "$groups" -l "$loops" 2>&1)
		busy > /tmp/b1
		p1=$(stat_get pushes); w1=$(stat_get wakeup_redirects)
		t=$(echo "$out" | awk '/^Time:/ { print $2 }')
		if [ -z "$t" ]; then
			echo "SPREAD ERROR hackbench: $(echo "$out" | tail -n 1)"
			continue
		fi
		share=$(awk 'NR == FNR { a[$1] = $2; next }
			{ d[FNR] = $2 - a[$1]; s += d[FNR] }
			END { for (i = 1; i <= FNR; i++) printf "%s%.3f", (i > 1 ? "," : ""), (s ? d[i] / s : 0) }' \
			/tmp/b0 /tmp/b1)
		echo "SPREAD mask=$m run=$run time=$t busy=$share pushes=$((p1 - p0)) redirects=$((w1 - w0))"
	done
done
echo "SPREAD DONE"
