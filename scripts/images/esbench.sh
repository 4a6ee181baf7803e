#!/usr/bin/env bash
# The esbench image without a registry: the same contents as operator/Dockerfile (Python 3.11,
# git, esrally 2.13.0 and Apache Otava 0.8.0 in virtualenvs of their own at /opt/rally and
# /opt/otava, the esbench package with its bundled tracks in /opt/esbench, user 10001, entrypoint
# `esbench`, command `operator`), built as a Debian bookworm root filesystem plus wheels and
# packed as an OCI archive named docker.io/local/esbench:0.1.0. Differences from the Dockerfile: Python is Debian's python3
# (3.11, as in python:3.11-slim-bookworm) instead of the python image's own build.
#
# Three layers, each cached, because the operator's code changes far more often than its
# dependencies, and those more often than the rest: a change of code builds, packs and imports
# (scripts/images/import.sh, into a node that keeps its images) only the last, small layer.
#   base: Debian + Python + git + esrally's and Otava's venvs + user 10001 + the empty venv
#         /opt/esbench (a folder and its packed layer; ~3 min cold)
#   deps: the operator's dependencies (operator/pyproject.toml) installed in /opt/esbench
#   code: the esbench package from operator/ (~15 s: install, pack)
# The upper layers are built in a chroot of an overlay mount of the layers below, whose upper
# folder then holds exactly what the install added: the layer.
# Prints the archive's path. Cached by a hash of the operator sources and these scripts.
source "$(dirname "$0")/lib.sh"
ESRALLY_VERSION=2.13.0
OTAVA_VERSION=0.8.0
name=docker.io/local/esbench:0.1.0
base_hash=$(content_hash "$images_dir/esbench.sh" "$images_dir/lib.sh")
base="$image_cache/esbench-base-$base_hash"
deps_hash=$(content_hash "$images_dir/esbench.sh" "$images_dir/lib.sh" "$repo_root/operator/pyproject.toml")
deps="$image_cache/esbench-deps-$deps_hash"
hash=$(content_hash "$images_dir/esbench.sh" "$images_dir/lib.sh" "$images_dir/oci-pack.py" "$repo_root/operator")
archive="$image_cache/esbench-0.1.0-$hash.tar"
[ -s "$archive" ] && { echo "$archive"; exit 0; }

# Wheels are built on the host (PyPI is reachable here, and pip's cache makes rebuilds quick),
# then installed inside the root filesystem with --no-index: no network inside the chroot.
# They must match the image's CPython 3.11.
python=${ESBENCH_WHEEL_PYTHON:-python3}
"$python" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' \
  || { echo "esbench.sh: need a CPython 3.11 on the host to build wheels (set ESBENCH_WHEEL_PYTHON)" >&2; exit 1; }
wheels() { "$python" -m pip wheel --quiet --disable-pip-version-check --wheel-dir "$@" >&2; }
work=$(mktemp -d "$image_cache/.esbench.XXXXXX")
trap 'rm -rf "$work"' EXIT

# in_layer UPPER LOWERS WHEELS SCRIPT: runs SCRIPT (sh -e) as root in a chroot of the layers
# LOWERS (overlayfs lowerdir, highest first) with the wheel folder WHEELS at /tmp/wheels; what it
# changes lands in the folder UPPER, which must then hold no deletion (a layer of oci-pack.py has
# no whiteouts). A private mount namespace: every mount vanishes with it, whatever happens.
in_layer() {
  local upper=$1 lowers=$2 wheel_dir=$3 script=$4
  mkdir -p "$upper" "$work/overlay-work" "$work/merged"
  cp -r "$wheel_dir" "$upper/tmp-wheels"
  unshare --mount --propagation private sh -ec '
    mount -t overlay overlay -o "lowerdir=$1,upperdir=$2,workdir=$3" "$4"
    mount --rbind /dev "$4/dev"; mount -t proc proc "$4/proc"
    root=$4; shift 4; chroot "$root" "$@"' sh "$lowers" "$upper" "$work/overlay-work" "$work/merged" \
    "${CHROOT_ENV[@]}" sh -ec "mv /tmp-wheels /tmp/wheels; $script; rm -rf /tmp/wheels" >&2
  rm -rf "$work/overlay-work"
  if [ -n "$(find "$upper" -type c -print -quit)" ]; then
    echo "esbench.sh: the layer install deleted files of the layers below" >&2; exit 1
  fi
}

if [ ! -s "$base.tar" ]; then  # moved in last: a base without it is unfinished
  # esrally and Otava pin old libraries that clash with the operator's: their own wheel sets and venvs.
  wheels "$work/wheels" "esrally==$ESRALLY_VERSION"
  wheels "$work/otava-wheels" "apache-otava==$OTAVA_VERSION"
  # The RUN steps of operator/Dockerfile that do not involve our code, as mmdebstrap hooks.
  mmdebstrap --quiet --variant=apt --include=python3,python3-venv,git,ca-certificates,openjdk-17-jre-headless,util-linux-extra \
    --customize-hook="copy-in $work/wheels $work/otava-wheels /tmp" \
    --customize-hook='chroot "$1" '"${CHROOT_ENV[*]}"' sh -ec "
        python3 -m venv /opt/rally
        /opt/rally/bin/pip install --quiet --no-index --find-links /tmp/wheels esrally=='"$ESRALLY_VERSION"'
        python3 -m venv /opt/otava
        /opt/otava/bin/pip install --quiet --no-index --find-links /tmp/otava-wheels apache-otava=='"$OTAVA_VERSION"'
        /opt/otava/bin/python -c \"from otava.analysis import compute_change_points\"
        python3 -m venv /opt/esbench
        groupadd --gid 10001 esbench
        useradd --uid 10001 --gid esbench --create-home --home-dir /work esbench
        rm -rf /tmp/wheels /tmp/otava-wheels /root/.cache"' \
    --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin' \
    "$DEBIAN_SUITE" "$work/base" "$DEBIAN_MIRROR" >&2
  rm -rf "$work/wheels" "$work/otava-wheels"
  python3 "$images_dir/oci-pack.py" layer "$work/base" "$work/base.tar"
  rm -rf "$image_cache"/esbench-base-* "$image_cache"/esbench-deps-*  # older bases, and what was built on them
  mv "$work/base" "$base"
  mv "$work/base.tar" "$base.tar"
fi

if [ ! -s "$deps.tar" ]; then
  "$python" -c 'import sys, tomllib; print("\n".join(tomllib.load(open(sys.argv[1], "rb"))["project"]["dependencies"]))' \
    "$repo_root/operator/pyproject.toml" > "$work/requirements.txt"
  wheels "$work/wheels" -r "$work/requirements.txt"
  cp "$work/requirements.txt" "$work/wheels/"
  in_layer "$work/deps" "$base" "$work/wheels" \
    "/opt/esbench/bin/pip install --quiet --no-cache-dir --no-index --find-links /tmp/wheels -r /tmp/wheels/requirements.txt"
  rm -rf "$work/wheels"
  python3 "$images_dir/oci-pack.py" layer "$work/deps" "$work/deps.tar"
  rm -rf "$image_cache"/esbench-deps-*  # older ones
  mv "$work/deps" "$deps"
  mv "$work/deps.tar" "$deps.tar"
fi

# Build from a copy so the repository never gets build/ or egg-info debris.
cp -r "$repo_root/operator" "$work/operator-src"
rm -rf "$work/operator-src"/*.egg-info "$work/operator-src/build"
wheels "$work/wheels" --no-deps "$work/operator-src"
in_layer "$work/code" "$deps:$base" "$work/wheels" \
  "/opt/esbench/bin/pip install --quiet --no-cache-dir --no-index --no-deps --find-links /tmp/wheels esbench
   /opt/esbench/bin/pip check"
# The bundled tracks must be in the installed package (package data), or the runner has none.
ls "$work/code"/opt/esbench/lib/python3.11/site-packages/esbench/runner/tracks/smoke/track.json >/dev/null
# async-profiler, sha1-verified by the code that pins it (and cached where local mode keeps it).
PYTHONPATH="$repo_root/operator" "$repo_root/.venv/bin/python" -m esbench.localnode.profiler "$work/code/opt/async-profiler"
chmod -R a+rX "$work/code/opt/async-profiler"

python3 "$images_dir/oci-pack.py" --layer "$base.tar" --layer "$deps.tar" --layer "$work/code" \
  --name "$name" --out "$archive" \
  --entrypoint '["esbench"]' --cmd '["operator"]' --user 10001:10001 --workdir /work \
  --env PATH=/opt/esbench/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  --env PYTHONDONTWRITEBYTECODE=1 --env PYTHONUNBUFFERED=1 --env PIP_NO_CACHE_DIR=1 \
  --env ESBENCH_ESRALLY=/opt/rally/bin/esrally --env ESBENCH_OTAVA=/opt/otava \
  --env ESBENCH_ASYNC_PROFILER=/opt/async-profiler >/dev/null
prune_older "esbench-0.1.0" "$archive"
echo "$archive"
