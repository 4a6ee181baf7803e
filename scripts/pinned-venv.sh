#!/usr/bin/env bash
# A virtualenv of its own for one pinned Python tool whose dependencies would fight with the
# operator's (esrally, checkov): installed once, then left as it is.
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
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check "$package==$version"
