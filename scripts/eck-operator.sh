#!/usr/bin/env bash
# Builds the real ECK operator (the `manager` command of elastic/cloud-on-k8s) at the version
# of our CRDs from its Go module, with all of ECK's CRDs beside it, into the esbench cache: the
# integration tests run it against their API server (everything ECK does but pods); on the node
# it runs from the image of scripts/images/eck-operator.sh, installed by scripts/eck-install.sh.
# Idempotent: returns at once when the binary for this version is already cached.
# Cold: about 7.5 minutes on 2 cores with the module downloads (measured beside the rest of `make deps`).
source "$(dirname "$0")/lib.sh"

out="$cache/eck/$ECK_VERSION"
bin="$out/eck-operator"

exit_if_cached "ECK $ECK_VERSION operator: $bin" test -x "$bin" -a -s "$out/all-crds.yaml"
need_go 1.26
module=github.com/elastic/cloud-on-k8s/v3
src=$(go_module_dir "$module@$ECK_VERSION")
mkdir -p "$out"

# A release build: without buildSnapshot=false ECK calls itself 3.5.0-SNAPSHOT.
ldflags="-s -w -X $module/pkg/about.version=${ECK_VERSION#v} -X $module/pkg/about.buildSnapshot=false"
start=$(date +%s)
# -mod=readonly: the module's own go.sum pins every dependency (its go.mod has replace
# directives, so `go install module@version` is refused); the checksum database is unreachable.
(cd "$src" && GOSUMDB=off GOFLAGS=-mod=readonly CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$bin.tmp" ./cmd >&2)
cp "$src/config/crds/v1/all-crds.yaml" "$out/all-crds.yaml.tmp"
chmod 0644 "$out/all-crds.yaml.tmp"
mv "$out/all-crds.yaml.tmp" "$out/all-crds.yaml"
# Renamed last, so an interrupted build never looks finished.
mv "$bin.tmp" "$bin"
echo "ECK $ECK_VERSION operator: $bin (built in $(( $(date +%s) - start )) s)"
