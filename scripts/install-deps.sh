#!/usr/bin/env bash
# Installs the Debian packages of the parts named (default: build) from the
# one list, scripts/packages.txt — only those missing, so a machine that has
# them all is left alone and needs no network:
#
#   bash scripts/install-deps.sh               # what configuring and building needs
#   bash scripts/install-deps.sh build test    # and what the test suite uses
#
# `--list PART...` prints the packages of those parts without installing.
set -euo pipefail
list_file="$(dirname "$0")/packages.txt"

list_only=0
if [ "${1:-}" = "--list" ]; then list_only=1; shift; fi
parts=("$@")
((${#parts[@]})) || parts=(build)

known=$(awk '!/^#/ && NF >= 2 { n = split($2, p, ","); for (i = 1; i <= n; i++) print p[i] }' "$list_file" | sort -u)
for part in "${parts[@]}"; do
  grep -qx -- "$part" <<<"$known" || {
    echo "install-deps: no part '$part' in $list_file (parts: $(tr '\n' ' ' <<<"$known"))" >&2
    exit 2
  }
done

packages=()
while read -r package part_field rest; do
  [[ -z "$package" || "$package" = \#* ]] && continue
  wanted=0
  for part in "${parts[@]}"; do
    [[ ",$part_field," = *",$part,"* ]] && wanted=1
  done
  ((wanted)) || continue
  # unless=PROGRAM: a program of that name from elsewhere serves already.
  unless=$(grep -o 'unless=[^ ]*' <<<"$rest" | head -n 1 | cut -d= -f2 || true)
  if [ -n "$unless" ] && command -v "$unless" >/dev/null; then continue; fi
  packages+=("$package")
done <"$list_file"

if ((list_only)); then
  printf '%s\n' "${packages[@]}"
  exit 0
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
((${#missing[@]} == 0)) && exit 0

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "installing (${parts[*]}): ${missing[*]}"
$sudo apt-get update
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends "${missing[@]}"
