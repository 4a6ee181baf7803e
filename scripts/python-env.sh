#!/usr/bin/env bash
# The operator's own virtualenv (operator + test deps). esrally lives in a separate one
# (scripts/rally-env.sh) because it pins old libraries that fight with ours.
set -euo pipefail
venv=${1:-.venv}
here=$(cd "$(dirname "$0")/.." && pwd)
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check -e "$here/operator[test]"
