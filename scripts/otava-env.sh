#!/usr/bin/env bash
# Apache Otava's own virtualenv, for change-point detection over the history's series
# (esbench.analysis.changepoints). Otava pins numpy 2.2.0 and scipy below 1.17, older than the
# operator's, so it cannot share the operator's venv.
# Usage: scripts/otava-env.sh [VENV]   (default: <repo>/.venv-otava; elsewhere: ESBENCH_OTAVA=VENV)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
exec bash "$here/scripts/pinned-venv.sh" apache-otava 0.8.0 "${1:-$here/.venv-otava}"
