#!/usr/bin/env bash
# kill -9 a storing sweep at random moments and check the database each time:
# PRAGMA integrity_check must say ok and the next predict must store its row.
#   scripts/kill-test.sh [N] [DIR]   (default 50 kills, a temporary directory)
# Prints one line per failure and a closing "kill-test: N kills, K while storing,
# C corrupt, F next-predict failures".
set -u
n=${1:-50}
dir=${2:-$(mktemp -d /tmp/zbench-kill-XXXXXX)}
Z=${ZBENCH:-build/zbench}
db=$dir/kill.db
command -v sqlite3 >/dev/null || { echo "kill-test: needs the sqlite3 shell"; exit 2; }
$Z predict --model gpt2 --steps 3 --db "$db" >/dev/null || exit 2
corrupt=0 nextfail=0 storing=0
for i in $(seq 1 "$n"); do
	$Z sweep --timeline --model gpt2-medium --ratio 0:1:0.25 --pcie gen4,gen5 --db "$db" --csv >/dev/null 2>&1 &
	pid=$!
	# the sweep computes for ~0.2-0.4 s, then stores for ~0.3 s: kill anywhere in 0..0.8 s
	sleep "0.$(printf '%03d' $((RANDOM % 800)))"
	before=$(sqlite3 "$db" "SELECT count(*) FROM runs" 2>/dev/null)
	kill -9 $pid 2>/dev/null && [ -e "$db-wal" ] && storing=$((storing + 1))
	wait $pid 2>/dev/null
	ic=$(sqlite3 "$db" "PRAGMA integrity_check" 2>&1 | head -1)
	[ "$ic" = ok ] || { corrupt=$((corrupt + 1)); echo "kill $i: integrity_check: $ic"; }
	$Z predict --model gpt2 --steps 3 --db "$db" >/dev/null 2>"$dir/err" ||
		{ nextfail=$((nextfail + 1)); echo "kill $i: next predict: $(cat "$dir/err")"; }
done
echo "kill-test: $n kills, $storing with the database open, $corrupt corrupt, $nextfail next-predict failures ($(sqlite3 "$db" 'SELECT count(*) FROM runs') runs stored)"
[ $corrupt -eq 0 ] && [ $nextfail -eq 0 ]
