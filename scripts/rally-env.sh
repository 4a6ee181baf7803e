#!/usr/bin/env bash
# Rally's own virtualenv. esrally pins old libraries exactly (urllib3 1.26, elasticsearch
# 8.6.1, jsonschema 3.1.1, ...), so it cannot share the operator's venv.
# Usage: scripts/rally-env.sh [VENV]   (default: <repo>/.venv-rally)
# The runner finds esrally through ESBENCH_ESRALLY=<VENV>/bin/esrally (tests default to it).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
exec bash "$here/scripts/pinned-venv.sh" esrally 2.13.0 "${1:-$here/.venv-rally}"
