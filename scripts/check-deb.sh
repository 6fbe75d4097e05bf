#!/usr/bin/env bash
# Builds the Debian packages and installs them on a fresh Debian bookworm: a
# minimal root made by debootstrap, entered with chroot. There apt-get installs
# troupe_*.deb with what its Depends pull in, `troupe ask --script` answers,
# then troupe-dev_*.deb and a compiler build the installed examples with
# find_package(troupe) and a program with pkg-config, and run them.
#
# Needs root and the Debian archive (debootstrap and apt-get download from
# it), which is why ctest does not run it. The root is made in a temporary
# directory and removed afterwards; KEEP_ROOT=1 leaves it.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${TROUPE_BUILD_DIR:-build}"
[ "$(id -u)" -eq 0 ] || { echo "scripts/check-deb.sh: needs root (debootstrap, chroot)" >&2; exit 2; }

bash scripts/install-deps.sh build root-checks
# The command and the examples: between them every installed library.
bash scripts/build.sh --target troupe embedded_agent
rm -rf "$build_dir/package"
cpack --config "$build_dir/CPackConfig.cmake" -B "$build_dir/package" >/dev/null
cli_deb=$(ls "$build_dir"/package/troupe_*.deb)
dev_deb=$(ls "$build_dir"/package/troupe-dev_*.deb)

root=$(mktemp -d /tmp/troupe-bookworm.XXXXXX)
chmod 755 "$root"  # apt downloads as the _apt user
cleanup() {
  for mount in dev/pts proc; do
    if mountpoint -q "$root/$mount"; then umount "$root/$mount"; fi
  done
  # Never into a mount that is still there.
  [ "${KEEP_ROOT:-0}" = 1 ] || rm -rf --one-file-system "$root"
}
trap cleanup EXIT
echo "debootstrap bookworm into $root"
debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian >/dev/null
mount -t proc proc "$root/proc"
mount --bind /dev/pts "$root/dev/pts"  # apt-get keeps a terminal log
cp "$cli_deb" "$dev_deb" tests/install/installed_headers_program.cpp "$root/tmp/"
in_root() { chroot "$root" env DEBIAN_FRONTEND=noninteractive sh -euc "$1"; }

in_root 'apt-get update -qq'
echo "apt-get install $(basename "$cli_deb")"
in_root "apt-get install -y -qq --no-install-recommends /tmp/$(basename "$cli_deb") >/dev/null"
answer=$(in_root 'cd / && troupe ask --script /usr/share/troupe/examples/scripts/calculator.json --tool calculator "What is 12.5 * 8 + 3?"')
echo "troupe ask: $answer"
[[ "$answer" == *"= 103."* ]] || { echo "troupe ask gave no answer" >&2; exit 1; }

echo "apt-get install $(basename "$dev_deb") g++ cmake make pkg-config"
in_root "apt-get install -y -qq --no-install-recommends /tmp/$(basename "$dev_deb") g++ cmake make pkg-config >/dev/null"
in_root 'cmake -S /usr/share/troupe/examples -B /tmp/examples >/dev/null && cmake --build /tmp/examples -j "$(nproc)" >/dev/null'
in_root '/tmp/examples/embedded_agent' | grep "answer: It is 21"
in_root 'cd /tmp && g++ installed_headers_program.cpp -o program $(pkg-config --cflags --libs troupe) && ./program' | grep installed
echo "both packages install and work on a fresh bookworm"
