#!/usr/bin/env bash
# The operator's own virtualenv (operator + test deps). esrally lives in a separate one
# (scripts/rally-env.sh) because it pins old libraries that fight with ours.
set -euo pipefail
venv=${1:-.venv}
here=$(cd "$(dirname "$0")/.." && pwd)
uv=$(bash "$here/scripts/uv.sh")
# The machine's python3 (uv would otherwise be free to pick, or fetch, another), and pip in the
# venv as python -m venv puts it there. Bytecode compiled at install, as pip does: where
# PYTHONDONTWRITEBYTECODE is set (these machines), every process would compile every module it
# imports, every time.
[ -x "$venv/bin/python" ] || UV_PYTHON_DOWNLOADS=never "$uv" venv --quiet --seed --python python3 "$venv"
"$uv" pip install --quiet --compile-bytecode --python "$venv/bin/python" -e "$here/operator[test]"
