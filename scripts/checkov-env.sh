#!/usr/bin/env bash
# Checkov's own virtualenv, for `make lint` (scripts/checkov.sh). Checkov pins many libraries
# (boto3, pydantic, networkx, ...), so it cannot share the operator's venv.
# Usage: scripts/checkov-env.sh [VENV]   (default: <repo>/.venv-checkov)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
exec bash "$here/scripts/pinned-venv.sh" checkov 3.3.30 "${1:-$here/.venv-checkov}"
