#!/usr/bin/env bash
# Make sure the Debian packages zbench needs are installed. As root, installs what
# is missing; otherwise prints the exact command to run and fails.
# Usage: scripts/deps.sh [build|report|test|fuzz]   (report adds the browser the report's
# test renders it in, headless Chromium, and a font; test adds what the tests need,
# the browser and python3 (the CSV read by Python's csv module) included; fuzz adds clang
# and its libFuzzer runtime for `make fuzz`, on top of test)
set -eu
need=(build-essential make pkg-config libsqlite3-dev libjansson-dev zlib1g-dev gnuplot-nox)
case "${1:-build}" in
report) need+=(chromium fonts-dejavu-core) ;;
test) need+=(libcmocka-dev chromium fonts-dejavu-core python3) ;;
fuzz) need+=(libcmocka-dev chromium fonts-dejavu-core python3 clang libclang-rt-dev) ;;
esac
missing=()
for p in "${need[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -eq 0 ]; then
	echo "zbench: installing ${missing[*]}" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >/dev/null
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
	echo "zbench: missing Debian packages; run: sudo apt-get install -y ${missing[*]}" >&2
	exit 1
fi
