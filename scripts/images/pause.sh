#!/usr/bin/env bash
# The pod sandbox ("pause") image, docker.io/local/pause:3.10, without a registry: a static
# C program that sleeps until signalled and reaps orphans, like Kubernetes' build/pause/linux/pause.c.
# Prints the OCI archive's path. Cached by content hash.
source "$(dirname "$0")/lib.sh"
name=docker.io/local/pause:3.10
hash=$(content_hash "$images_dir/pause.sh" "$images_dir/pause.c" "$images_dir/oci-pack.py")
archive="$image_cache/pause-3.10-$hash.tar"
[ -s "$archive" ] && { echo "$archive"; exit 0; }
work=$(mktemp -d "$image_cache/.pause.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/rootfs"
gcc -Os -static -o "$work/rootfs/pause" "$images_dir/pause.c"
strip "$work/rootfs/pause"
python3 "$images_dir/oci-pack.py" --layer "$work/rootfs" --name "$name" --out "$archive" \
  --entrypoint '["/pause"]' --user 65535:65535 >/dev/null
prune_older "pause-3.10" "$archive"
echo "$archive"
