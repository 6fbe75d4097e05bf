#!/usr/bin/env bash
# The README's two commands as a new user runs them: on a fresh minimal Debian
# bookworm (debootstrap --variant=minbase: no compiler, cmake or git), in a
# clean clone of the committed tree (HEAD: uncommitted changes are not in it)
# with shared/ beside it when the checkout has one, as root in a chroot. Each
# command gets a root of its own, so neither leans on what the other
# installed:
#
#   sudo bash scripts/fresh-check.sh              # demo, then test
#   sudo bash scripts/fresh-check.sh test         # one of them
#   CI=true sudo -E bash scripts/fresh-check.sh   # with CI's variable set inside
#
# Prints each command's time and exit code, and for the test command its
# ctest summary and what it skipped; keeps every log in $FRESH_CHECK_LOGS
# (default /tmp/troupe-fresh-check.TIME). Exits non-zero if either failed.
# Needs root and the Debian archive (debootstrap and apt-get download from
# it). The roots are removed afterwards; KEEP_ROOT=1 leaves them.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
[ "$(id -u)" -eq 0 ] || { echo "scripts/fresh-check.sh: needs root (debootstrap, chroot)" >&2; exit 2; }
commands=("$@")
((${#commands[@]})) || commands=(demo test)
for c in "${commands[@]}"; do
  [[ "$c" = demo || "$c" = test ]] || { echo "usage: scripts/fresh-check.sh [demo] [test]" >&2; exit 2; }
done

bash scripts/install-deps.sh root-checks
logs="${FRESH_CHECK_LOGS:-/tmp/troupe-fresh-check.$(date +%Y%m%d-%H%M%S)}"
mkdir -p "$logs"
work=$(mktemp -d /tmp/troupe-fresh.XXXXXX)
chmod 755 "$work"  # apt downloads as the _apt user

unmount_all() {
  local root=$1
  # Innermost first, never a mount that is still there under rm.
  for mount in $(awk -v r="$root/" 'index($2, r) == 1 { print $2 }' /proc/mounts | sort -r); do
    umount -l "$mount" 2>/dev/null || true
  done
}
cleanup() {
  for root in "$work"/*/; do [ -d "$root" ] && unmount_all "${root%/}"; done
  [ "${KEEP_ROOT:-0}" = 1 ] && { echo "fresh-check: roots kept in $work"; return; }
  awk -v r="$work/" 'index($2, r) == 1 { found = 1 } END { exit !found }' /proc/mounts ||
    rm -rf --one-file-system "$work"
}
trap cleanup EXIT

echo "fresh-check: debootstrap bookworm (minbase) into $work/base"
debootstrap --variant=minbase bookworm "$work/base" http://deb.debian.org/debian >"$logs/debootstrap.log" 2>&1 ||
  { tail -n 20 "$logs/debootstrap.log" >&2; exit 1; }
commit=$(git -C "$repo" rev-parse --short HEAD)

status=0
summary=()
for c in "${commands[@]}"; do
  root="$work/$c"
  cp -a "$work/base" "$root"
  mkdir -p "$root/work"
  git clone --quiet --no-hardlinks "$repo" "$root/work/main"
  if [ -d "$repo/../shared" ]; then
    cp -a "$repo/../shared" "$root/work/shared"
    chmod -R a-w "$root/work/shared"  # as CI lays it: read-only
  fi
  mount -t proc proc "$root/proc"
  mount -t sysfs sys "$root/sys"
  mount --rbind /dev "$root/dev"  # with /dev/shm: PostgreSQL's and Chromium's shared memory
  mount --make-rslave "$root/dev"

  # The host's extra certificate authorities for node (a registry reached through a
  # proxy of its own): the root gets the file, and the variable names it there.
  extra_ca=()
  if [ -n "${NODE_EXTRA_CA_CERTS:-}" ] && [ -f "$NODE_EXTRA_CA_CERTS" ]; then
    cp "$NODE_EXTRA_CA_CERTS" "$root/etc/host-extra-ca.crt"
    extra_ca=(NODE_EXTRA_CA_CERTS=/etc/host-extra-ca.crt)
  fi

  log="$logs/$c.log"
  echo "fresh-check: bash scripts/$c.sh at $commit (log: $log)"
  start=$(date +%s)
  set +e
  chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb ${CI:+CI="$CI"} "${extra_ca[@]}" \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    bash -c "cd /work/main && bash scripts/$c.sh" </dev/null >"$log" 2>&1
  rc=$?
  set -e
  seconds=$(($(date +%s) - start))
  unmount_all "$root"
  line="$c: exit $rc after ${seconds} s"
  if [ "$c" = test ]; then
    counts=$(grep -E '^tests: [0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "$log" | tail -n 1 || true)
    ctest_line=$(grep -E '^[0-9]+% tests passed' "$log" | tail -n 1 || true)
    line+="; ${counts:-no test summary}${ctest_line:+ ($ctest_line)}"
    sed -n '/^skipped [0-9]*:$/,/^tests: /p' "$log" >"$logs/test-skips.txt"
  fi
  summary+=("$line")
  ((rc == 0)) || status=1
  echo "fresh-check: $line"
  if ((rc != 0)); then tail -n 30 "$log" | sed 's/^/  | /'; fi
done

echo "fresh-check: a fresh bookworm root, a clean clone of $commit; logs in $logs"
printf '  %s\n' "${summary[@]}"
exit "$status"
