#!/usr/bin/env bash
# The repository stands alone: no file may read or cite material a user who clones it
# does not have (the design folder kvplan was planned in, a reference-notes file, a build
# machine's absolute paths). Figures live in docs/ with their original sources.
# usage: scripts/check_standalone.sh [REPO_ROOT]; exit 1 listing each offending line.
set -uo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root"
self=scripts/check_standalone.sh
excludes=(--exclude=.git --exclude-dir=.git --exclude-dir='build*' --exclude-dir=out)
found=0
report() { [ -n "$1" ] && { echo "$1"; found=1; }; }
# The issue's own criterion: "shared/" in C++ sources, headers and Markdown.
report "$(grep -rn 'shared/' --include='*.cpp' --include='*.h' --include='*.md' "${excludes[@]}" . | grep -v "^./$self:")"
# Anywhere: the parent folder's material, the notes file, a build machine's paths.
report "$(grep -rInE '\.\./shared|facts\.md|/work/(shared|wt|main|notes)' "${excludes[@]}" . | grep -v "^./$self:")"
if [ "$found" = 1 ]; then
  echo "check_standalone: the lines above cite material outside the repository; move what they rely on into docs/ with its original source" >&2
  exit 1
fi
echo "check_standalone: the repository cites nothing outside itself"
