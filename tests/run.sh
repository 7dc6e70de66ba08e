#!/usr/bin/env bash
# Run zbench's test programs and print one closing line: "tests: N passed, N failed, N skipped".
# Each program is a cmocka runner asked for TAP output; a program that crashes or
# exits non-zero without reporting a failure counts as one failed test.
# An argument that is a directory (tests/gpu when built without CUDA) is reported
# as skipped: no GPU.
set -u
passed=0 failed=0 skipped=0
failures=()
for prog in "$@"; do
	if [ -d "$prog" ]; then
		for src in "$prog"/test_*.c; do
			[ -e "$src" ] || continue
			echo "skipped: no GPU (built without CUDA): $src"
			skipped=$((skipped + 1))
		done
		continue
	fi
	name=$(basename "$prog")
	out=$(CMOCKA_MESSAGE_OUTPUT=TAP "$prog" 2>&1)
	rc=$?
	printf '%s\n' "$out" | sed "s/^/[$name] /"
	# cmocka's TAP: "ok N - name", "not ok N - name", "not ok N # SKIP name"
	s=$(printf '%s\n' "$out" | grep -cE '^(not )?ok [0-9]+ # ?SKIP')
	p=$(printf '%s\n' "$out" | grep -E '^ok [0-9]+' | grep -cvE '# ?SKIP')
	f=$(printf '%s\n' "$out" | grep -E '^not ok [0-9]+' | grep -cvE '# ?SKIP')
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		f=1
		echo "[$name] exited with status $rc"
	fi
	passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
	[ "$f" -gt 0 ] && failures+=("$name")
done
[ ${#failures[@]} -gt 0 ] && echo "failing programs: ${failures[*]}"
echo "tests: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
