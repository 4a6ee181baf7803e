#!/usr/bin/env bash
# A virtualenv of its own for one pinned Python tool whose dependencies would fight with the
# operator's (esrally, checkov, Otava): installed once (by uv, scripts/uv.sh), then left as it is.
# Usage: scripts/pinned-venv.sh PACKAGE VERSION VENV
set -euo pipefail
package=$1
version=$2
venv=$3
# Fast path: already installed at the right version.
if [ -x "$venv/bin/python" ] && "$venv/bin/python" - "$package" "$version" <<'PY' 2>/dev/null; then
import sys, importlib.metadata as m
sys.exit(0 if m.version(sys.argv[1]) == sys.argv[2] else 1)
PY
  exit 0
fi
uv=$(bash "$(dirname "$0")/uv.sh")
[ -x "$venv/bin/python" ] || UV_PYTHON_DOWNLOADS=never "$uv" venv --quiet --seed --python python3 "$venv"
"$uv" pip install --quiet --compile-bytecode --python "$venv/bin/python" "$package==$version"
