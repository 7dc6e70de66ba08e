#!/usr/bin/env bash
# check-layers.sh - every include goes to the including file's own folder or to a
# lower layer, never up: the layers are the Makefile's LAYERS line, lowest first,
# the one place that orders them. Also: a folder's private headers (parts.h,
# builder.h) are included from that folder only. tests/ and fuzz/ sit above every
# layer and may include anything.
#
#   scripts/check-layers.sh    one line per offending include, exit 1 if any:
#   sim/a.c:7: includes exec/b.h (exec/ is layer 9, above sim/, layer 6)
set -u
cd "$(dirname "$0")/.."
layers=$(sed -n 's/^LAYERS *:= *//p' Makefile)
if [ -z "$layers" ]; then
	echo "check-layers: no LAYERS line in the Makefile" >&2
	exit 2
fi
declare -A rank
i=0
for l in $layers; do
	i=$((i + 1))
	rank[$l]=$i
done
bad=0
for dir in $layers; do
	[ -d "$dir" ] || { echo "check-layers: layer $dir/ of the Makefile does not exist" >&2; bad=1; continue; }
	while IFS= read -r hit; do
		file=${hit%%:*}
		rest=${hit#*:}
		line=${rest%%:*}
		inc=$(printf '%s' "${rest#*:}" | sed -E 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"([^"]*)".*/\1/')
		case $inc in */*) ;; *) continue ;; esac # same folder
		to=${inc%%/*}
		[ -n "${rank[$to]:-}" ] || continue      # not a layer (a system header with a path)
		if [ "${rank[$to]}" -gt "${rank[$dir]}" ]; then
			echo "$file:$line: includes $inc ($to/ is layer ${rank[$to]}, above $dir/, layer ${rank[$dir]})"
			bad=1
		elif [ "$to" != "$dir" ]; then
			case ${inc##*/} in
			parts.h | builder.h)
				echo "$file:$line: includes $inc (private to $to/)"
				bad=1
				;;
			esac
		fi
	done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$dir"/*.c "$dir"/*.h "$dir"/*.cu "$dir"/*.cuh 2>/dev/null)
done
if [ $bad -ne 0 ]; then
	echo "check-layers: includes against the layer order (Makefile LAYERS: $layers)" >&2
	exit 1
fi
echo "check-layers: every include goes to its own folder or below ($(echo $layers | wc -w) layers)"
