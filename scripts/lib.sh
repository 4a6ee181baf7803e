# shellcheck shell=bash disable=SC2034  # sourced: its variables are for the scripts that source it
# Shared by the dependency scripts in this folder and scripts/node/packages.sh (sourced, not run).
# Built tools go into $ESBENCH_CACHE/NAME/VERSION; a warm run only checks that they are there.
set -euo pipefail
cache=${ESBENCH_CACHE:-$HOME/.cache/esbench}
script=${0##*/}
# The ECK release whose API esbench's operator and tests speak (CRDs and operator, from its Go module).
ECK_VERSION=v3.5.0
# The dynamic volume provisioner of the offline node (kind ships the same one as its default class).
LOCAL_PATH_PROVISIONER_VERSION=v0.0.30
# The Kubernetes release built by k8s-binaries.sh (tests/support/controlplane.py names it too).
K8S_VERSION=v1.32.4
k8s_bin="$cache/k8s/$K8S_VERSION/bin"
kubectl() { "$k8s_bin/kubectl" "$@"; }

# exit_if_cached MESSAGE COMMAND...: when COMMAND succeeds (the cache is warm), print MESSAGE
# and end the script.
exit_if_cached() {
  local message=$1
  shift
  if "$@"; then
    echo "$message"
    exit 0
  fi
}

# need_go [MIN_VERSION]: the go command, or end the script saying it is missing.
need_go() {
  # Non-login shells (CI) may lack the Go install dir on PATH.
  export PATH="$PATH:/usr/local/go/bin"
  command -v go >/dev/null || { echo "$script: 'go' not found on PATH${1:+ (need Go >= $1)}" >&2; exit 1; }
}

# go_install BIN PACKAGE@VERSION [LDFLAGS]: build the command PACKAGE at BIN (Go's output to stderr).
# Into a scratch GOBIN, then renamed, so an interrupted build never looks finished. Run outside
# any module; the checksum database is unreachable here, so skip it.
go_install() {
  local bin=$1 package=$2 ldflags=${3:--s -w}
  local tmp
  tmp="$(dirname "$bin")/.build"
  rm -rf "$tmp"
  mkdir -p "$tmp"
  (
    cd /
    GOSUMDB=off GOFLAGS=-mod=mod CGO_ENABLED=0 GOBIN="$tmp" \
      go install -trimpath -ldflags "$ldflags" "$package" >&2
  )
  local name=${package%@*}
  mv "$tmp/${name##*/}" "$bin"
  rm -rf "$tmp"
}

# go_module_dir MODULE@VERSION: download the module from the Go module proxy and print its
# (read-only) directory in the module cache. Run outside any module so the download never
# touches a go.mod; the checksum database is unreachable here, so skip it.
go_module_dir() {
  (cd / && GOSUMDB=off GOFLAGS='' go mod download -json "$1") |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["Dir"])'
}

# missing_packages PACKAGE...: the Debian packages that are not installed, one a line.
missing_packages() {
  local p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || echo "$p"
  done
}

# apt_install PACKAGE...: install them, without recommends and without questions.
apt_install() {
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@"
}
