#!/usr/bin/env bash
# Checks the Markdown files the repository tracks (README.md, docs/, …):
#   check-docs.sh links     every relative link resolves to a file or folder of
#                           the repository, and no link points outside it (a URL
#                           outside code is a link too: renderers make it one);
#                           code blocks and `code spans` are not read, so example
#                           values such as http://127.0.0.1:8080 stay there.
#   check-docs.sh mirrors   a code block after a line `<!-- mirrors PATH -->` is
#                           the file PATH, byte for byte, so that a snippet the
#                           build compiles cannot drift from what the page shows.
# Exits non-zero naming each file and line at fault. ctest runs both.
set -euo pipefail
cd "$(dirname "$0")/.."
mode="${1:-}"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files '*.md' | grep -v '/node_modules/')
else  # a source tree without git (an archive)
  mapfile -t files < <(find . -path './build*' -prune -o -path '*/node_modules' -prune -o -name '*.md' -print |
    sed 's|^\./||' | sort)
fi
((${#files[@]})) || { echo "no Markdown files found" >&2; exit 1; }

# Prints "LINE<TAB>TARGET" for every link target of a Markdown file, outside
# fenced code blocks and code spans; bare URLs count as targets.
link_targets() {
  awk '
    /^[ \t]*(```|~~~)/ { fenced = !fenced; next }
    fenced { next }
    /^[ \t]*$/ { inspan = 0; next }  # a code span ends with its paragraph
    {
      # The text outside code spans, which may run over several lines.
      n = split($0, part, "`")
      line = ""
      for (i = 1; i <= n; i++) {
        if (i > 1) inspan = !inspan
        if (!inspan) line = line part[i]
      }
      outside = line
      while (match(line, /\]\([^)]*\)/)) {
        print NR "\t" substr(line, RSTART + 2, RLENGTH - 3)
        line = substr(line, RSTART + RLENGTH)
      }
      line = outside
      if (match(line, /^[ \t]*\[[^]]+\]:[ \t]+[^ \t]+/)) {
        target = line
        sub(/^[ \t]*\[[^]]+\]:[ \t]+/, "", target)
        sub(/[ \t].*$/, "", target)
        print NR "\t" target
      }
      while (match(line, /[a-zA-Z][a-zA-Z+.-]*:\/\/[^ \t)>]+/)) {
        print NR "\t" substr(line, RSTART, RLENGTH)
        line = substr(line, RSTART + RLENGTH)
      }
    }' "$1"
}

check_links() {
  local bad=0 file dir line target path root
  root=$(pwd -P)
  for file in "${files[@]}"; do
    dir=$(dirname "$file")
    while IFS=$'\t' read -r line target; do
      target="${target#<}"
      target="${target%>}"
      target="${target%% \"*}"  # a title: [text](path "title")
      case "$target" in
        "" | "#"*) continue ;;
        [a-zA-Z]*://* | mailto:* | www.*)
          echo "$file:$line: points outside the repository: $target" >&2
          bad=1
          continue
          ;;
      esac
      path="${target%%#*}"
      path="${path%%\?*}"
      if [[ "$path" == /* ]]; then path=".$path"; else path="$dir/$path"; fi
      if [[ "$(realpath -m "$path")/" != "$root"/* ]]; then
        echo "$file:$line: points outside the repository: $target" >&2
        bad=1
      elif [[ ! -e "$path" ]]; then
        echo "$file:$line: no such file: $target" >&2
        bad=1
      fi
    done < <(link_targets "$file")
  done
  ((bad == 0)) && echo "${#files[@]} Markdown files: every link resolves inside the repository"
  return "$bad"
}

check_mirrors() {
  local bad=0 count=0 file line path block
  for file in "${files[@]}"; do
    while IFS=$'\t' read -r line path; do
      count=$((count + 1))
      if [[ ! -f "$path" ]]; then
        echo "$file:$line: mirrors $path, which does not exist" >&2
        bad=1
        continue
      fi
      # The fenced block that starts on the next non-empty line.
      block=$(awk -v start="$line" '
        NR <= start { next }
        !open && /^[ \t]*$/ { next }
        !open && /^[ \t]*```/ { open = 1; next }
        !open { exit }
        /^[ \t]*```/ { exit }
        { print }' "$file")
      if [[ "$block" != "$(cat "$path")" ]]; then
        echo "$file:$line: the code block differs from $path:" >&2
        diff <(printf '%s\n' "$block") "$path" >&2 || true
        bad=1
      fi
    done < <(awk '
      match($0, /^<!-- mirrors [^ ]+ -->[ \t]*$/) {
        path = $0
        sub(/^<!-- mirrors /, "", path)
        sub(/ -->[ \t]*$/, "", path)
        print NR "\t" path
      }' "$file")
  done
  ((count > 0)) || { echo "no <!-- mirrors PATH --> block found" >&2; return 1; }
  ((bad == 0)) && echo "$count code blocks are the files they mirror"
  return "$bad"
}

case "$mode" in
  links) check_links ;;
  mirrors) check_mirrors ;;
  *)
    echo "usage: $0 links|mirrors" >&2
    exit 2
    ;;
esac
