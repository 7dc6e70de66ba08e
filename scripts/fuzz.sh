#!/usr/bin/env bash
# Run every libFuzzer harness (build-fuzz/fuzz/fuzz_*, built by `make FUZZ=1
# fuzz-build`) for SECONDS each, one after the other, and print one summary line
# per harness plus a closing line. A crash, hang (> 10 s), sanitizer report or a
# run over 1 GB stops that harness, leaves the input in build-fuzz/artifacts/ and
# makes the script fail.
#
# Usage: scripts/fuzz.sh [SECONDS] [HARNESS...]   (default 60 s, all harnesses)
# The corpus of each harness grows in build-fuzz/corpus/NAME, seeded from
# tests/data, hw/ and fuzz/seeds/; logs go to build-fuzz/logs/NAME.log.
set -u
cd "$(dirname "$0")/.."
secs=${1:-60}
shift || true
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
	for b in build-fuzz/fuzz/fuzz_*; do names+=("$(basename "$b")"); done
fi
mkdir -p build-fuzz/corpus build-fuzz/artifacts build-fuzz/logs

seed() { # seed NAME FILES...: copy seed files into the corpus (once)
	local dir=build-fuzz/corpus/$1
	shift
	mkdir -p "$dir"
	for f in "$@"; do [ -f "$f" ] && cp -n "$f" "$dir/" 2>/dev/null; done
	return 0
}
seed fuzz_hwfile hw/*.json
seed fuzz_modelfile fuzz/seeds/model/*
seed fuzz_dsconfig tests/data/ds-*.json
seed fuzz_hfconfig tests/data/hf-*.json
seed fuzz_options fuzz/seeds/options/*
seed fuzz_range fuzz/seeds/range/*
seed fuzz_ds_tasks fuzz/seeds/ds_tasks/*
seed fuzz_plot fuzz/seeds/plot/*
seed fuzz_measured fuzz/seeds/measured/*
# fuzz_merge and fuzz_import write their seed databases into their corpus themselves
seed fuzz_kineto fuzz/seeds/kineto/*

failed=0 total=0
for n in "${names[@]}"; do
	bin=build-fuzz/fuzz/$n
	[ -x "$bin" ] || { echo "fuzz: $n: not built (make FUZZ=1 fuzz-build)"; failed=1; continue; }
	dict=()
	case $n in fuzz_hwfile | fuzz_modelfile | fuzz_dsconfig | fuzz_hfconfig | fuzz_kineto) dict=(-dict=fuzz/json.dict) ;; esac
	log=build-fuzz/logs/$n.log
	mkdir -p build-fuzz/corpus/$n # (a harness may seed its own corpus: fuzz_merge, fuzz_import)
	"$bin" build-fuzz/corpus/$n "${dict[@]}" -max_total_time="$secs" -timeout=10 -rss_limit_mb=1024 \
		-malloc_limit_mb=1024 -close_fd_mask=3 -print_final_stats=1 \
		-artifact_prefix="build-fuzz/artifacts/$n-" >"$log" 2>&1
	rc=$?
	execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
	corpus=$(ls build-fuzz/corpus/$n | wc -l)
	total=$((total + ${execs:-0}))
	if [ $rc -ne 0 ]; then
		failed=1
		echo "fuzz: $n: FAILED (exit $rc) after ${execs:-?} executions; see $log and build-fuzz/artifacts/"
		grep -E 'ERROR|SUMMARY|runtime error|Test unit written' "$log" | head -5 | sed 's/^/fuzz:   /'
	else
		echo "fuzz: $n: ${execs:-0} executions in $secs s, corpus $corpus files, 0 crashes"
	fi
done
echo "fuzz: ${#names[@]} harnesses, $total executions, $([ $failed -eq 0 ] && echo "no failures" || echo "FAILURES")"
exit $failed
