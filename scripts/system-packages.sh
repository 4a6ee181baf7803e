#!/usr/bin/env bash
# Debian packages the tests need: etcd for the real kube-apiserver, a JDK for Elasticsearch.
set -euo pipefail
packages=(etcd-server openjdk-17-jre-headless)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
