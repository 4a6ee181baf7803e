#!/usr/bin/env bash
# Builds Rancher's local-path provisioner (the default StorageClass of kind and k3s) from its Go
# module into the esbench cache: the offline node installs it with the module's Helm chart
# (scripts/node/storage.sh) so that a PersistentVolumeClaim binds there as on any cluster.
# Idempotent: returns at once when the binary for this version is already cached.
source "$(dirname "$0")/lib.sh"

out="$cache/local-path-provisioner/$LOCAL_PATH_PROVISIONER_VERSION"
bin="$out/local-path-provisioner"

exit_if_cached "local-path provisioner $LOCAL_PATH_PROVISIONER_VERSION: $bin" test -x "$bin"
need_go
src=$(go_module_dir "github.com/rancher/local-path-provisioner@$LOCAL_PATH_PROVISIONER_VERSION")
mkdir -p "$out"
start=$(date +%s)
# -mod=readonly: the module's go.sum pins every dependency (its vendor folder is not in the module
# zip); the checksum database is unreachable.
(cd "$src" && GOSUMDB=off GOFLAGS=-mod=readonly CGO_ENABLED=0 go build -trimpath \
  -ldflags "-s -w -X main.VERSION=${LOCAL_PATH_PROVISIONER_VERSION#v}" -o "$bin.tmp" . >&2)
# Renamed last, so an interrupted build never looks finished.
mv "$bin.tmp" "$bin"
echo "local-path provisioner $LOCAL_PATH_PROVISIONER_VERSION: $bin (built in $(( $(date +%s) - start )) s)"
