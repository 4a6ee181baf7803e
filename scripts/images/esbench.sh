#!/usr/bin/env bash
# The esbench image without a registry: the same contents as operator/Dockerfile (Python 3.11,
# git, esrally 2.13.0 and Apache Otava 0.8.0 in virtualenvs of their own at /opt/rally and
# /opt/otava, the esbench package with its bundled tracks in /opt/esbench, user 10001, entrypoint
# `esbench`, command `operator`), built as a Debian bookworm root filesystem plus wheels and
# packed as an OCI archive named docker.io/local/esbench:0.1.0. Differences from the Dockerfile: Python is Debian's python3
# (3.11, as in python:3.11-slim-bookworm) instead of the python image's own build.
#
# Two stages, because the operator changes far more often than the rest:
#   base: Debian + Python + git + esrally's and Otava's venvs + user 10001 (cached as a folder;
#         ~3 min cold)
#   image: base + the esbench package from operator/ (~1 min: copy, install, pack)
# Prints the archive's path. Cached by a hash of the operator sources and these scripts.
source "$(dirname "$0")/lib.sh"
ESRALLY_VERSION=2.13.0
OTAVA_VERSION=0.8.0
name=docker.io/local/esbench:0.1.0
base_hash=$(content_hash "$images_dir/esbench.sh" "$images_dir/lib.sh")
base="$image_cache/esbench-base-$base_hash"
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

if [ ! -d "$base" ]; then
  # esrally and Otava pin old libraries that clash with the operator's: their own wheel sets and venvs.
  wheels "$work/wheels" "esrally==$ESRALLY_VERSION"
  wheels "$work/otava-wheels" "apache-otava==$OTAVA_VERSION"
  # The RUN steps of operator/Dockerfile that do not involve our code, as mmdebstrap hooks.
  mmdebstrap --quiet --variant=apt --include=python3,python3-venv,git,ca-certificates \
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
  rm -rf "$image_cache"/esbench-base-*  # older bases
  mv "$work/base" "$base"
fi

# Build from a copy so the repository never gets build/ or egg-info debris.
cp -r "$repo_root/operator" "$work/operator-src"
rm -rf "$work/operator-src"/*.egg-info "$work/operator-src/build"
mkdir -p "$work/rootfs"
cp -a "$base/." "$work/rootfs/"
wheels "$work/rootfs/tmp/wheels" "$work/operator-src"
# A private mount namespace: /dev and /proc for the chroot vanish with it, whatever happens.
unshare --mount --propagation private sh -ec '
  mount --rbind /dev "$1/dev"; mount -t proc proc "$1/proc"
  shift; chroot "$@"' sh "$work/rootfs" "$work/rootfs" "${CHROOT_ENV[@]}" sh -ec '
    /opt/esbench/bin/pip install --quiet --no-index --find-links /tmp/wheels esbench
    rm -rf /tmp/wheels /root/.cache'
# The bundled tracks must be in the installed package (package data), or the runner has none.
ls "$work/rootfs"/opt/esbench/lib/python3.11/site-packages/esbench/runner/tracks/smoke/track.json >/dev/null

python3 "$images_dir/oci-pack.py" --rootfs "$work/rootfs" --name "$name" --out "$archive" \
  --entrypoint '["esbench"]' --cmd '["operator"]' --user 10001:10001 --workdir /work \
  --env PATH=/opt/esbench/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  --env PYTHONDONTWRITEBYTECODE=1 --env PYTHONUNBUFFERED=1 --env PIP_NO_CACHE_DIR=1 \
  --env ESBENCH_ESRALLY=/opt/rally/bin/esrally --env ESBENCH_OTAVA=/opt/otava >/dev/null
prune_older "esbench-0.1.0" "$archive"
echo "$archive"
