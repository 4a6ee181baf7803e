#!/usr/bin/env bash
# Debian packages the tests need: etcd for the real kube-apiserver, a JDK for Elasticsearch.
source "$(dirname "$0")/lib.sh"
packages=(etcd-server openjdk-17-jre-headless)
mapfile -t missing < <(missing_packages "${packages[@]}")
[ ${#missing[@]} -eq 0 ] && exit 0
apt_install "${missing[@]}"
