#!/usr/bin/env bash
# Generates the parser from grammar.js, runs the corpus tests, then parses
# every file listed in PATHS_FILE (one path a line) and fails if any parse
# has an ERROR or MISSING node. Works on a copy of this folder, so the
# folder itself is left as it is.
#
#   scripts/parse-all.sh PATHS_FILE
#
# Needs the tree-sitter CLI on PATH (or in $TREE_SITTER) and a C compiler.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
paths="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
ts="${TREE_SITTER:-tree-sitter}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp -r "$here/grammar.js" "$here/tree-sitter.json" "$here/queries" "$here/test" "$work/"
mkdir "$work/src"
cp "$here/src/scanner.c" "$work/src/"
cd "$work"
"$ts" generate
"$ts" test -p .
# One summary line: "Total parses: N; successful parses: N; failed parses: N; ..."
out="$("$ts" parse -p . --paths "$paths" --quiet --stat 2>&1 || true)"
printf '%s\n' "$out" | grep -v '^Warning\|init-config\|configuration file\|language grammars' || true
summary="$(printf '%s\n' "$out" | grep 'Total parses:' || true)"
if [ -z "$summary" ]; then
  echo "parse-all: tree-sitter printed no summary" >&2
  exit 1
fi
case "$summary" in
  *"failed parses: 0;"*) ;;
  *) echo "parse-all: some files have ERROR or MISSING nodes" >&2; exit 1 ;;
esac
