#!/usr/bin/env bash
# Checkov's own virtualenv, for `make lint` (scripts/checkov.sh). Checkov pins many libraries
# (boto3, pydantic, networkx, ...), so it cannot share the operator's venv.
# Usage: scripts/checkov-env.sh [VENV]   (default: <repo>/.venv-checkov)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
venv=${1:-$here/.venv-checkov}
version=3.3.30
# Fast path: already installed at the right version.
if [ -x "$venv/bin/checkov" ] && "$venv/bin/python" - "$version" <<'PY' 2>/dev/null; then
import sys, importlib.metadata as m
sys.exit(0 if m.version("checkov") == sys.argv[1] else 1)
PY
  exit 0
fi
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check "checkov==$version"
