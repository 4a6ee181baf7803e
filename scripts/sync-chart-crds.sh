#!/usr/bin/env bash
# Copies the CRDs from crds/ (the one source of truth) into the Helm chart's crds/ folder.
# A copy, not a symlink: `helm package` does not follow symlinks out of the chart.
# tests/chart/test_chart.py fails when the two drift apart; run this script to fix that.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
src="$root/crds"
dest="$root/charts/esbench/crds"

mkdir -p "$dest"
# Remove CRDs that no longer exist in crds/, then copy every current one.
for f in "$dest"/*.yaml "$dest"/*.yml; do
  [ -e "$f" ] || continue
  [ -e "$src/$(basename "$f")" ] || { rm -f "$f"; echo "removed $f"; }
done
for f in "$src"/*.yaml "$src"/*.yml; do
  [ -e "$f" ] || continue
  if ! cmp -s "$f" "$dest/$(basename "$f")"; then
    cp "$f" "$dest/"
    echo "copied $f -> $dest/"
  fi
done
