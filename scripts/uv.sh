#!/usr/bin/env bash
# uv (astral-sh/uv, from PyPI), which makes the project's virtualenvs: from its cache, a venv of
# hundreds of packages takes seconds where pip takes a minute, and a clean clone makes four of
# them. Installed once into a virtualenv of its own under the cache; prints the uv binary's path.
source "$(dirname "$0")/lib.sh"

UV_VERSION=0.13.9
home="$cache/uv/$UV_VERSION"
uv="$home/bin/uv"

exit_if_cached "$uv" test -x "$uv"
rm -rf "$home.tmp"
python3 -m venv "$home.tmp"
"$home.tmp/bin/pip" install --quiet --disable-pip-version-check "uv==$UV_VERSION" >&2
rm -rf "$home"
mv "$home.tmp" "$home"  # an interrupted install never looks finished
echo "$uv"
