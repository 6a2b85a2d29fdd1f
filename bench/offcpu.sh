#!/bin/sh
# bench/offcpu.sh [ROUNDS [SECONDS]]: the cost of off-CPU sampling on a
# program that switches very often (bench/fixture/pingpong.c: two threads
# hand a byte through pipes, each blocking and waking tens of thousands of
# times a second), against perf's ways of recording the same. Variants run
# interleaved, round by round. Prints one line per run:
#   VARIANT trips/s TARGET_CPU_s PROFILER_CPU_s SAMPLES LOST
# where PROFILER_CPU_s is the profiler's getrusage (with its reaped
# children) minus the target's own, and for perf includes `perf script`
# (what a perf user runs to read the stacks).
set -eu
rounds=${1:-3}
secs=${2:-2}
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/gprof" .
gcc -O2 -g -fno-omit-frame-pointer -pthread -o "$tmp/pingpong" bench/fixture/pingpong.c
cpu() { # user+sys seconds of a command and its children, from /usr/bin/time
	/usr/bin/time -f '%U %S' -o "$tmp/time" "$@" >"$tmp/out" 2>"$tmp/err" || true
	awk '{print $1+$2}' "$tmp/time"
}
target() { awk '/trips_per_s/ {print $3, $5}' "$tmp/out"; }
run() {
	case $1 in
	unprofiled)
		c=$(cpu "$tmp/pingpong" "$secs"); set -- $(target); echo "unprofiled $1 $2 0 0 0" ;;
	gprof)
		c=$(cpu "$tmp/gprof" record -q --json -o "$tmp/p.json" -- "$tmp/pingpong" "$secs")
		set -- $(target); s=$(grep '"samples"' "$tmp/out" | tr -dc 0-9); l=$(grep '"lost"' "$tmp/out" | tr -dc 0-9)
		echo "gprof $1 $2 $(echo "$c - $2" | bc) $s $l" ;;
	gprof-offcpu)
		c=$(cpu "$tmp/gprof" record --off-cpu -q --json -o "$tmp/p.json" -- "$tmp/pingpong" "$secs")
		set -- $(target); s=$(grep '"samples"' "$tmp/out" | tr -dc 0-9); l=$(grep '"lost"' "$tmp/out" | tr -dc 0-9)
		echo "gprof-offcpu $1 $2 $(echo "$c - $2" | bc) $s $l" ;;
	gprof-offcpu-cap)
		c=$(cpu "$tmp/gprof" record --off-cpu --off-cpu-cap 2000 -q --json -o "$tmp/p.json" -- "$tmp/pingpong" "$secs")
		set -- $(target); s=$(grep '"samples"' "$tmp/out" | tr -dc 0-9); l=$(grep '"lost"' "$tmp/out" | tr -dc 0-9)
		echo "gprof-offcpu-cap $1 $2 $(echo "$c - $2" | bc) $s $l" ;;
	perf-sched)
		c=$(cpu perf record -q -e sched:sched_switch -g -o "$tmp/perf.data" -- "$tmp/pingpong" "$secs")
		set -- $(target)
		c2=$(cpu perf script -i "$tmp/perf.data")
		s=$(grep -c 'sched:sched_switch' "$tmp/out" || true)
		l=$(perf report -i "$tmp/perf.data" --stats 2>/dev/null | awk '/LOST/ {n+=$2} END {print n+0}')
		echo "perf-sched $1 $2 $(echo "$c + $c2 - $2" | bc) $s $l" ;;
	esac
}
for r in $(seq "$rounds"); do
	set -- unprofiled gprof gprof-offcpu gprof-offcpu-cap perf-sched
	# rotate the order each round
	i=0
	while [ $i -lt $((r % 5)) ]; do v=$1; shift; set -- "$@" "$v"; i=$((i + 1)); done
	for v in "$@"; do run "$v"; done
done
