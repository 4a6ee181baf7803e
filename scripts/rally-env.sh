#!/usr/bin/env bash
# Rally's own virtualenv. esrally pins old libraries exactly (urllib3 1.26, elasticsearch
# 8.6.1, jsonschema 3.1.1, ...), so it cannot share the operator's venv.
# Usage: scripts/rally-env.sh [VENV]   (default: <repo>/.venv-rally)
# The runner finds esrally through ESBENCH_ESRALLY=<VENV>/bin/esrally (tests default to it).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
venv=${1:-$here/.venv-rally}
version=2.13.0
# Fast path: already installed at the right version.
if [ -x "$venv/bin/esrally" ] && "$venv/bin/python" - "$version" <<'PY' 2>/dev/null; then
import sys, importlib.metadata as m
sys.exit(0 if m.version("esrally") == sys.argv[1] else 1)
PY
  exit 0
fi
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check "esrally==$version"
