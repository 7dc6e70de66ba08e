#!/usr/bin/env bash
# architecture.sh - docs/ARCHITECTURE.md from the tree, so it cannot drift: the
# hand-written part (docs/ARCHITECTURE.in.md: what the layers are, the data paths)
# with, where it says @HEADERS@, every public header of every layer in the
# Makefile's LAYERS order and the first paragraph of the header's opening comment.
#
#   scripts/architecture.sh           the document on stdout
#   scripts/architecture.sh --check   exit 1 when docs/ARCHITECTURE.md is not what
#                                     this prints, when the template names a file
#                                     that does not exist, a layer the template does
#                                     not mention, or a header without an opening comment
set -u
cd "$(dirname "$0")/.."
template=docs/ARCHITECTURE.in.md
layers=$(sed -n 's/^LAYERS *:= *//p' Makefile)
[ -n "$layers" ] || { echo "architecture: no LAYERS line in the Makefile" >&2; exit 2; }
[ -r "$template" ] || { echo "architecture: no $template" >&2; exit 2; }

# The first paragraph of a file's opening /* ... */ comment as one line, without
# the "name.h - " it starts with; empty when the file opens with no comment.
summary() {
	awk '
	NR == 1 && !/^\/\*/ { exit }
	{
		line = $0
		done = sub(/ *\*\/.*$/, "", line)
		if (NR == 1) sub(/^\/\*+ ?/, "", line)
		else sub(/^ ?\* ?/, "", line)
		if (NR > 1 && line == "" && text != "") exit # the first paragraph
		if (line != "") text = text (text == "" ? "" : " ") line
		if (done) exit
	}
	END {
		sub(/^[A-Za-z0-9_.]+ +- +/, "", text)
		gsub(/  +/, " ", text)
		print text
	}' "$1"
}

headers() {
	for dir in $layers; do
		[ -d "$dir" ] || continue
		echo "### \`$dir/\`"
		echo
		for h in "$dir"/*.h "$dir"/*.cuh; do
			[ -e "$h" ] || continue
			echo "- **\`$h\`**: $(summary "$h")"
		done
		echo
	done
}

generate() {
	while IFS= read -r line; do
		if [ "$line" = "@HEADERS@" ]; then
			headers | sed '$d'
		else
			printf '%s\n' "$line"
		fi
	done < "$template"
}

if [ "${1:-}" != "--check" ]; then
	generate
	exit 0
fi
bad=0
if ! generate | cmp -s - docs/ARCHITECTURE.md; then
	echo "architecture: docs/ARCHITECTURE.md is not what scripts/architecture.sh makes of the tree;" \
	     "run: scripts/architecture.sh > docs/ARCHITECTURE.md" >&2
	bad=1
fi
for dir in $layers; do
	grep -q "\`$dir/\`" "$template" || { echo "architecture: $template does not say what $dir/ is" >&2; bad=1; }
	for h in "$dir"/*.h "$dir"/*.cuh; do
		[ -e "$h" ] || continue
		[ -n "$(summary "$h")" ] || { echo "architecture: $h opens with no comment saying what it is for" >&2; bad=1; }
	done
done
for path in $(grep -oE '`[a-z_]+/[A-Za-z0-9_./-]+`' "$template" | tr -d '`' | sort -u); do
	case " $layers tests scripts docs data hw fuzz " in *" ${path%%/*} "*) ;; *) continue ;; esac
	case $path in *.db | */) continue ;; esac # made at run time; a folder
	[ -e "$path" ] || { echo "architecture: $template names $path, which does not exist" >&2; bad=1; }
done
exit $bad
