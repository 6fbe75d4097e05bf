#!/usr/bin/env bash
# The main job: installs what is missing, builds, and runs the example agent
# (the ReAct machine through a scripted conversation with tool calls).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh --target scripted_react
exec "${TROUPE_BUILD_DIR:-build}/examples/scripted_react" "$@"
