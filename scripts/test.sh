#!/usr/bin/env bash
# Installs what is missing (the PostgreSQL server included), builds
# everything warning-free, and runs every test through ctest, beside a
# throwaway PostgreSQL server for the PostgreSQL store's tests.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
bash scripts/install-deps.sh postgresql
bash scripts/build.sh
cd "${TROUPE_BUILD_DIR:-build}"
bash "$root/scripts/with-postgres.sh" ctest --output-on-failure --parallel "$(nproc)"
