#!/usr/bin/env bash
# Installs the Debian packages troupe builds with — only those missing, so a
# machine that has them all is left alone and needs no network. Extra
# package names given as arguments are installed too (the tests add the
# PostgreSQL server this way).
set -euo pipefail

packages=(
  g++ cmake ninja-build
  libboost1.81-dev libboost-json1.81-dev
  libcaf-dev libvalijson-dev libcli11-dev
  libcurl4-openssl-dev libssl-dev ca-certificates libedit-dev libsqlite3-dev libpq-dev
  catch2 libbenchmark-dev libjemalloc-dev
  libtomlplusplus-dev libboost-url1.81-dev libutfcpp-dev
  "$@"
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
((${#missing[@]} == 0)) && exit 0

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "installing: ${missing[*]}"
$sudo apt-get update
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends "${missing[@]}"
