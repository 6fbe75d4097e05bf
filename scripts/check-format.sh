#!/usr/bin/env bash
# Checks that every tracked .cpp and .hpp is laid out as .clang-format says
# (clang-format --dry-run --Werror); on a violation, lists the files and
# exits non-zero. `clang-format -i FILE` fixes one. ctest runs it as
# "clang-format compliance".
set -euo pipefail
cd "$(dirname "$0")/.."
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files '*.cpp' '*.hpp')
else  # a source tree without git (an archive): what a checkout would track
  mapfile -t files < <(find . -path './build*' -prune -o -path '*/node_modules' -prune -o \
    \( -name '*.cpp' -o -name '*.hpp' \) -print | sed 's|^\./||' | sort)
fi
((${#files[@]})) || { echo "no C++ files found" >&2; exit 1; }
# One clang-format per batch of files, not per file: its diagnostics name
# each file that differs.
status=0
report=$(printf '%s\0' "${files[@]}" | xargs -0 clang-format --dry-run --Werror 2>&1) || status=$?
mapfile -t bad < <(sed -n -E 's/^([^ :]+\.[ch]pp):[0-9]+:[0-9]+: error: .*/\1/p' <<<"$report" | sort -u)
if ((status != 0 && ${#bad[@]} == 0)); then  # clang-format itself failed
  echo "$report" >&2
  exit 1
fi
if ((${#bad[@]})); then
  echo "not formatted as .clang-format says (${#bad[@]} of ${#files[@]} files; clang-format -i FILE fixes one):" >&2
  printf '  %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "${#files[@]} files formatted as .clang-format says"
