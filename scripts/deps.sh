#!/usr/bin/env bash
# Make sure the Debian packages zbench needs are installed. As root, installs what
# is missing; otherwise prints the exact command to run and fails.
# Usage: scripts/deps.sh [build|test|fuzz]   (test adds what the tests need; fuzz
# adds clang and its libFuzzer runtime for `make fuzz`, on top of test)
set -eu
need=(build-essential make pkg-config libsqlite3-dev libjansson-dev zlib1g-dev gnuplot-nox)
case "${1:-build}" in
test) need+=(libcmocka-dev) ;;
fuzz) need+=(libcmocka-dev clang libclang-rt-dev) ;;
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
