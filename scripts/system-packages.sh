#!/usr/bin/env bash
# Debian packages the tests and `make lint` need: a JDK for Elasticsearch (etcd is built:
# scripts/etcd.sh), shellcheck for the scripts, Chromium to open the history page headless.
source "$(dirname "$0")/lib.sh"
packages=(openjdk-17-jre-headless shellcheck chromium)
mapfile -t missing < <(missing_packages "${packages[@]}")
[ ${#missing[@]} -eq 0 ] && exit 0
apt_install "${missing[@]}"
