#!/usr/bin/env bash
# A stand-in for the Python interpreter in tests of `zbench validate --deepspeed`
# (no GPU, no PyTorch): called as `python HARNESS ARGS...`, it prints a harness
# output (ds-step-output.txt: the harness's format with the s2-off figures of
# data/deepspeed-h200-table.tsv) with the configuration's name.
# ZB_FAKE_DS="name=mode,..." makes configuration <name> misbehave instead:
#   crash      a Python traceback and exit status 1
#   malformed  a result line cut short
#   silent     exit 0 without a result line
#   hang       sleep until killed (for --timeout)
cfg=torch
while [ $# -gt 0 ]; do
	[ "$1" = --ds-config ] && cfg=$(basename "$2" .json)
	shift
done
mode=ok
IFS=, read -ra rules <<<"${ZB_FAKE_DS:-}"
for r in "${rules[@]}"; do
	[ "${r%%=*}" = "$cfg" ] && mode=${r#*=}
done
here=$(dirname "$0")
case $mode in
crash)
	echo "Traceback (most recent call last):" >&2
	echo "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.07 GiB" >&2
	exit 1 ;;
malformed)
	echo '{"harness": "ds_step", "config": "'"$cfg"'", "step_ms": 15'
	exit 0 ;;
silent)
	echo "nothing measured"
	exit 0 ;;
hang)
	sleep 60
	exit 0 ;;
esac
sed "s/\"config\": \"s2-off\"/\"config\": \"$cfg\"/" "$here/ds-step-output.txt"
