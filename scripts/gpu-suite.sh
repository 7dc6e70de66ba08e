#!/usr/bin/env bash
# Run GPU work as suites of steps and bring back everything they wrote in a few files.
#
#   scripts/gpu-suite.sh SUITE[:STEP,STEP...]...    run the suites (or those steps of one), in order
#   scripts/gpu-suite.sh --list [SUITE...]          print the suites and their steps, run nothing
#
# A suite is a data file, scripts/suites/NAME.suite, one line per step:
#
#   NAME  SECONDS  COMMAND
#
# COMMAND runs with bash from the repository root, stdout and stderr into the step's log. SECONDS
# is its time limit: N (the step starts only when N seconds of the budget are left) or MIN-MAX
# (it starts when MIN are left and gets at most MAX). A line VAR=VALUE sets a variable for the
# steps after it (VALUE is taken as written, expanded when a step uses it); '#' starts a comment.
# A step that fails does not stop the next one. Every step sees:
#   ZB       build/zbench                 S        the suite's folder: write files there
#   STEP_S   the seconds this step has    PYTHON   the Python with PyTorch (default python3)
# and PYTHONPATH with /tmp/site (where the DeepSpeed wheels of .whl/ are installed), NCCL's library
# on LD_LIBRARY_PATH, NVLink multicast off (NCCL_NVLS_ENABLE=0).
#
# Environment:
#   OUT              the folder the results go to (default out/gpu-suite)
#   ZB_SUITE_BUDGET  seconds for the whole call, packing included (default 570: under a 10-minute limit)
#   ZB_SUITE_WORK    the working folder (default /tmp/zbench-suite; emptied first)
#   ZB_SUITES        where the suite files are (default scripts/suites)
#   ZB_SUITE_PART_MIB  archives larger than this are split into parts of it (default 15)
#
# $OUT receives at most 8 files, none larger than 16 MiB:
#   summary.txt    the host, then one line per step: suite/step, exit code, seconds, the log's last line
#   logs.tar.xz    the working folder without its databases: <suite>/<step>.log and .rc, host.txt, and
#                  every other file a step wrote
#   db.tar.xz      every *.db (with its -wal) under the working folder, xz -T0 -6; when larger than
#                  ZB_SUITE_PART_MIB, db.tar.xz.part-aa, -ab, ... (join: cat db.tar.xz.part-* | tar xJ)
# Exit status: 0 when every step ran and exited 0, 1 otherwise, 2 on bad arguments.
set -u
cd "$(dirname "$0")/.." || exit 2
SUITES=${ZB_SUITES:-scripts/suites}
BUDGET=${ZB_SUITE_BUDGET:-570}
PACK_S=30 # kept back from the budget for packing
PART_MIB=${ZB_SUITE_PART_MIB:-15}
T0=$SECONDS

die() { echo "gpu-suite: $*" >&2; exit 2; }
known() { (cd "$SUITES" 2>/dev/null && ls -- *.suite 2>/dev/null) | sed 's/\.suite$//' | paste -sd, - | sed 's/,/, /g'; }

# parse SUITE: print "name<TAB>min<TAB>max<TAB>command" per step and "=<TAB>VAR<TAB>VALUE" per variable
parse() {
	local file=$SUITES/$1.suite line name secs cmd min max n=0 seen=" "
	[ -f "$file" ] || die "unknown suite '$1' (known: $(known))"
	while IFS= read -r line || [ -n "$line" ]; do
		n=$((n + 1))
		[[ $line =~ ^[[:space:]]*(#|$) ]] && continue
		if [[ $line =~ ^([A-Za-z_][A-Za-z0-9_]*)=(.*)$ ]]; then
			printf '=\t%s\t%s\n' "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}"
			continue
		fi
		read -r name secs cmd <<<"$line"
		[[ $name =~ ^[A-Za-z0-9._-]+$ ]] || die "$file:$n: bad step name '$name'"
		case $seen in *" $name "*) die "$file:$n: step '$name' twice" ;; esac
		seen="$seen$name "
		if [[ $secs =~ ^([0-9]+)-([0-9]+)$ ]]; then
			min=${BASH_REMATCH[1]} max=${BASH_REMATCH[2]}
		elif [[ $secs =~ ^[0-9]+$ ]]; then
			min=$secs max=$secs
		else
			die "$file:$n: step '$name': seconds must be N or MIN-MAX (got '$secs')"
		fi
		{ [ "$min" -le "$max" ] && [ "$max" -gt 0 ]; } || die "$file:$n: step '$name': bad seconds '$secs'"
		[ -n "$cmd" ] || die "$file:$n: step '$name' has no command"
		printf '%s\t%s\t%s\t%s\n' "$name" "$min" "$max" "$cmd"
	done <"$file"
}

list() {
	local s name min max cmd total
	# shellcheck disable=SC2046 # suite names are words
	[ $# -gt 0 ] || set -- $(known | tr -d ,)
	for s in "$@"; do
		total=0
		echo "$s: $(sed -n 's/^# *//p' "$SUITES/$s.suite" 2>/dev/null | head -1)"
		while IFS=$'\t' read -r name min max cmd; do
			[ "$name" = = ] && continue
			printf '  %-20s %4s s  %s\n' "$name" "$([ "$min" = "$max" ] && echo "$max" || echo "$min-$max")" \
				"$(echo "$cmd" | cut -c1-90)"
			total=$((total + max))
		done < <(parse "$s")
		echo "  limits add up to $total s (a call has ZB_SUITE_BUDGET, default 570)"
	done
}

# the environment every step sees
setup_env() {
	export ZB=${ZB:-build/zbench} PYTHON=${PYTHON:-python3} PYTHONUNBUFFERED=1
	export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
	export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0} TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
	[ -d /usr/local/cuda/bin ] && export PATH=$PATH:/usr/local/cuda/bin
	local nccl
	nccl=$("$PYTHON" -c 'import nvidia.nccl as m, os; print(os.path.join(list(m.__path__)[0], "lib"))' 2>/dev/null)
	if { [ -z "$nccl" ] || [ ! -e "$nccl/libnccl.so.2" ]; } && [ "$(nvidia-smi -L 2>/dev/null | wc -l)" -ge 2 ]; then
		nccl=$(dirname "$(find / -name libnccl.so.2 -not -path '/proc/*' 2>/dev/null | head -1)" 2>/dev/null)
	fi
	[ -n "$nccl" ] && [ -e "$nccl/libnccl.so.2" ] && export LD_LIBRARY_PATH=$nccl${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	{
		date -u +"%F %T UTC"
		nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv,noheader 2>&1
		lscpu 2>/dev/null | grep -E 'Model name|^CPU\(s\)|Thread\(s\) per core|Socket|NUMA node\(s\)'
		grep MemTotal /proc/meminfo
		"$ZB" --version 2>&1 | head -1
		echo "NCCL: ${nccl:-none}"
	} >"$WORK/host.txt" 2>&1
}

left() { echo $((BUDGET - PACK_S - (SECONDS - T0))); }

STOP=0
CHILD=
on_stop() { STOP=1; [ -n "$CHILD" ] && kill -TERM "$CHILD" 2>/dev/null; }

# run_step SUITE NAME MIN MAX COMMAND: one line of the summary
run_step() {
	local suite=$1 name=$2 min=$3 max=$4 cmd=$5 l lim rc start tail
	local log=$WORK/$suite/$name.log
	l=$(left)
	if [ "$STOP" = 1 ] || [ "$l" -lt "$min" ]; then
		echo "not run: $([ "$STOP" = 1 ] && echo stopped || echo "needs $min s, $l s left")" >"$log"
		echo skipped >"$WORK/$suite/$name.rc"
		printf '%-32s %-8s %5s s  %s\n' "$suite/$name" skipped 0 "$(cat "$log")" | tee -a "$SUMMARY"
		return 1
	fi
	lim=$((max < l ? max : l))
	start=$SECONDS
	echo "# $suite/$name, ${lim} s: $cmd" >"$log"
	S=$WORK/$suite STEP_S=$lim timeout -k 10 "$lim" bash -c "$cmd" >>"$log" 2>&1 </dev/null &
	CHILD=$!
	wait "$CHILD"
	rc=$?
	while kill -0 "$CHILD" 2>/dev/null; do # a stop signal ended the wait, not the step
		wait "$CHILD"
		rc=$?
	done
	CHILD=
	echo "$rc" >"$WORK/$suite/$name.rc"
	tail=$(grep -v '^[[:space:]]*$' "$log" | tail -1 | cut -c1-110)
	[ "$rc" -eq 124 ] && tail="timeout after $lim s; $tail"
	printf '%-32s rc=%-5s %5s s  %s\n' "$suite/$name" "$rc" $((SECONDS - start)) "$tail" | tee -a "$SUMMARY"
	return $((rc != 0))
}

run_suite() {
	local suite=${1%%:*} only='' name min max cmd failed=0 ran=0
	[[ $1 == *:* ]] && only=",${1#*:},"
	mkdir -p "$WORK/$suite"
	while IFS=$'\t' read -r name min max cmd; do
		if [ "$name" = = ]; then
			export "$min=$max"
			continue
		fi
		[ -n "$only" ] && [[ $only != *",$name,"* ]] && continue
		ran=$((ran + 1))
		run_step "$suite" "$name" "$min" "$max" "$cmd" || failed=1
	done < <(parse "$suite")
	[ "$ran" -gt 0 ] || { echo "$suite: no step named ${only//,/ }" | tee -a "$SUMMARY"; failed=1; }
	return $failed
}

# pack NAME TAR-ARGS...: $OUT/NAME.tar.xz of paths relative to $WORK, in parts when large
pack() {
	local name=$1 tarball=$OUT/$1.tar.xz size
	shift
	tar -C "$WORK" -cf - "$@" | xz -T0 -6 >"$tarball" || { echo "pack $name: tar/xz failed" | tee -a "$SUMMARY"; return 1; }
	size=$(stat -c %s "$tarball")
	if [ "$size" -gt $((4 * PART_MIB << 20)) ]; then
		mv "$tarball" "$WORK/"
		echo "pack $name: $((size >> 20)) MiB compressed, over 4 parts: left on this machine in $WORK" | tee -a "$SUMMARY"
		return 1
	fi
	if [ "$size" -gt $((PART_MIB << 20)) ]; then
		split -b "${PART_MIB}M" "$tarball" "$tarball.part-" && rm -f "$tarball"
	fi
	echo "packed $name.tar.xz: $((size >> 10)) KiB$([ "$size" -gt $((PART_MIB << 20)) ] && echo ", in parts of $PART_MIB MiB")" |
		tee -a "$SUMMARY"
}

# the databases in one file each, without the readers' -shm (a checkpoint folds the -wal in)
pack_all() {
	local dbs=() db
	while IFS= read -r db; do dbs+=("$db"); done < <(cd "$WORK" && find . -name '*.db' -type f | sort)
	for db in "${dbs[@]}"; do
		"${PYTHON:-python3}" -c 'import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute("PRAGMA wal_checkpoint(TRUNCATE)"); c.close()' \
			"$WORK/$db" 2>/dev/null
		rm -f "$WORK/$db-shm"
	done
	local with_wal=() rc=0
	pack logs --exclude='*.db' --exclude='*.db-wal' --exclude='*.db-shm' . || rc=1
	for db in "${dbs[@]}"; do
		with_wal+=("$db")
		[ -f "$WORK/$db-wal" ] && with_wal+=("$db-wal")
	done
	if [ ${#with_wal[@]} -gt 0 ]; then pack db "${with_wal[@]}" || rc=1; fi
	return $rc
}

[ $# -gt 0 ] || die "usage: scripts/gpu-suite.sh [--list] SUITE[:STEP,...]... (suites: $(known))"
if [ "$1" = --list ]; then
	shift
	list "$@"
	exit 0
fi
for s in "$@"; do parse "${s%%:*}" >/dev/null || exit 2; done
OUT=${OUT:-out/gpu-suite}
WORK=${ZB_SUITE_WORK:-/tmp/zbench-suite}
mkdir -p "$OUT" || die "cannot create OUT '$OUT'"
OUT=$(cd "$OUT" && pwd)
rm -f "$OUT/summary.txt" "$OUT"/logs.tar.xz* "$OUT"/db.tar.xz*
{ rm -rf "$WORK" && mkdir -p "$WORK"; } || die "cannot create the working folder '$WORK'"
SUMMARY=$WORK/summary.txt
setup_env
[ -x "$ZB" ] || echo "warning: $ZB is missing (build on the development machine and carry build/)" | tee -a "$SUMMARY"
{
	echo "# gpu-suite $* (budget $BUDGET s)"
	sed -n '1,4p' "$WORK/host.txt" | sed 's/^/# /'
} | tee -a "$SUMMARY"
trap on_stop TERM INT
status=0
for s in "$@"; do
	run_suite "$s" || status=1
done
trap - TERM INT
pack_all || status=1
echo "gpu-suite: $(grep -c 'rc=0 ' "$SUMMARY") of $(grep -cE ' (rc=|skipped)' "$SUMMARY") steps passed, $((SECONDS - T0)) s" |
	tee -a "$SUMMARY"
cp "$SUMMARY" "$OUT/summary.txt"
exit $status
