#!/usr/bin/env bash
# Several visit scripts in ONE device call, each with its own output folder, each packed
# into one archive under $OUT (the device tool brings back at most 8 files):
#   run(command="scripts/visit-batch.sh flash fid2", carry=["build", ".whl"], timeout_s=600)
# runs scripts/visit-flash.sh then scripts/visit-fid2.sh with OUT=/tmp/visit/<name> and
# writes $OUT/<name>.tar.xz. A script that fails does not stop the next one.
set -u
OUT=${OUT:?"OUT: the output folder of the device tool"}
for name in "$@"; do
	script=scripts/visit-$name.sh
	if [ ! -x "$script" ] && [ ! -f "$script" ]; then
		echo "visit-batch: no script $script" | tee -a "$OUT/batch.log"
		continue
	fi
	dir=/tmp/visit/$name
	rm -rf "$dir" && mkdir -p "$dir"
	echo "=== $name start $(date +%T)" | tee -a "$OUT/batch.log"
	OUT=$dir bash "$script" >"$dir/stdout.log" 2>&1
	echo "=== $name exit $? at $(date +%T)" | tee -a "$OUT/batch.log"
	tail -n 25 "$dir/stdout.log"
	tar cJf "$OUT/$name.tar.xz" -C /tmp/visit "$name"
done
ls -la "$OUT"
