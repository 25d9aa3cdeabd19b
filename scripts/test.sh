#!/usr/bin/env bash
# The test command: builds everything (the tests start the real biometricd, authctl and
# store-crash-writer executables) and runs the whole suite. Run as root to include the
# access-control tests that switch to the `nobody` uid; CI does.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
swift build
swift test "$@"
