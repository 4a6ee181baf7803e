#!/usr/bin/env bash
# Fetches the real ECK Elasticsearch CRD from the ECK Go module (the Go module proxy is
# reachable where GitHub and container registries are not) into the esbench cache.
# Idempotent: returns at once when the CRD is already cached.
source "$(dirname "$0")/lib.sh"

CRD=elasticsearch.k8s.elastic.co_elasticsearches.yaml
dest="$cache/eck/$ECK_VERSION/$CRD"

exit_if_cached "ECK $ECK_VERSION Elasticsearch CRD: $dest" test -s "$dest"
need_go
command -v python3 >/dev/null || { echo "eck-crds.sh: 'python3' not found on PATH" >&2; exit 1; }

dir=$(go_module_dir "github.com/elastic/cloud-on-k8s/v3@$ECK_VERSION")
src="$dir/config/crds/v1/resources/$CRD"
[ -s "$src" ] || { echo "eck-crds.sh: $src not found in the ECK module" >&2; exit 1; }

mkdir -p "$(dirname "$dest")"
# Copy then rename: the module cache is read-only, and a half-written file must never pass the check above.
cp "$src" "$dest.tmp"
chmod 0644 "$dest.tmp"
mv "$dest.tmp" "$dest"
echo "ECK $ECK_VERSION Elasticsearch CRD: $dest"
