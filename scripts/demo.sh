#!/usr/bin/env bash
# The main job: installs what is missing, builds, and runs the example agent —
# a troupe runtime with one agent, a tool and a scripted model, offline.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh --target embedded_agent
exec "${TROUPE_BUILD_DIR:-build}/examples/embedded_agent" "$@"
