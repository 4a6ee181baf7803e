# shellcheck shell=bash disable=SC2034  # sourced: its variables are for the scripts that source it
# Shared by the image scripts in this folder (sourced, not run).
# Images are root filesystem folders packed by oci-pack.py into OCI archives named
# docker.io/local/NAME:TAG, cached under $ESBENCH_CACHE/images by a hash of everything that
# goes into them, so a warm run only checks the hash.
set -euo pipefail
images_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo_root=$(cd "$images_dir/../.." && pwd)
cache=${ESBENCH_CACHE:-$HOME/.cache/esbench}
image_cache="$cache/images"
DEBIAN_SUITE=bookworm
DEBIAN_MIRROR=${ESBENCH_DEBIAN_MIRROR:-http://deb.debian.org/debian}
mkdir -p "$image_cache"

# content_hash FILE_OR_DIR... : sha256 over names (relative, so every checkout agrees) and
# contents; bytecode and build debris excluded.
content_hash() {
  local p
  for p in "$@"; do
    printf '%s\n' "${p##*/}"
    if [ -d "$p" ]; then
      (cd "$p" && find . -type f ! -path '*/__pycache__/*' ! -name '*.pyc' ! -path '*.egg-info/*' -print0 \
        | LC_ALL=C sort -z | xargs -0 sha256sum)
    else
      cat "$p"
    fi
  done | sha256sum | cut -c1-16
}

# prune_older NAME-VERSION ARCHIVE: drop the older builds of the same image from the cache.
prune_older() {
  local prefix=$1 keep=$2 old
  for old in "$image_cache/$prefix"-*.tar; do
    [ "$old" = "$keep" ] || rm -f "$old"
  done
}

# In chroot hooks: a clean environment, so the host's PIP_*, LANG, ... never leak into a build.
CHROOT_ENV=(env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8)

# built_binary SCRIPT: the path of the binary a build script of scripts/ made (it prints
# "WHAT: PATH" or "WHAT: PATH (built in N s)").
built_binary() { bash "$repo_root/scripts/$1" | sed 's/^[^:]*: //; s/ (.*//'; }

# binary_image NAME VERSION BINARY TARGET USER: an image of one static binary, BINARY copied to
# TARGET (its entrypoint) on a Debian bookworm `essential` root filesystem (sh and coreutils
# included), packed as docker.io/local/NAME:VERSION running as USER (uid:gid). Prints the archive's
# path. Cached by a hash of the binary, the calling script and this library.
binary_image() {
  local name=$1 version=$2 binary=$3 target=$4 user=$5
  local hash archive
  hash=$(content_hash "$0" "$images_dir/lib.sh" "$images_dir/oci-pack.py" "$binary")
  archive="$image_cache/$name-$version-$hash.tar"
  [ -s "$archive" ] && { echo "$archive"; return; }
  # `work` is global, not local: the EXIT trap reads it after the function has returned.
  work=$(mktemp -d "$image_cache/.$name.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  mmdebstrap --quiet --variant=essential \
    --customize-hook="copy-in $binary /" \
    --customize-hook="mkdir -p \"\$1$(dirname "$target")\" && mv \"\$1/$(basename "$binary")\" \"\$1$target\"" \
    "$DEBIAN_SUITE" "$work/rootfs" "$DEBIAN_MIRROR" >&2
  python3 "$images_dir/oci-pack.py" --layer "$work/rootfs" --name "docker.io/local/$name:$version" \
    --out "$archive" --entrypoint "[\"$target\"]" --user "$user" >/dev/null
  prune_older "$name-$version" "$archive"
  echo "$archive"
}
