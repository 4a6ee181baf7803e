#!/usr/bin/env bash
# Debian packages the offline single node needs on the host (scripts/node/up.sh):
# containerd + runc (the container runtime the kubelet drives through CRI), the CNI plugins
# (bridge, host-local, portmap, firewall), iptables + conntrack (kube-proxy's iptables mode),
# mmdebstrap (image root filesystems, scripts/images/), and e2fsprogs (the pods' volumes, storage.sh).
# Idempotent: returns at once when everything is installed.
source "$(dirname "$0")/../lib.sh"
packages=(containerd runc containernetworking-plugins iptables conntrack ethtool socat
          mmdebstrap util-linux mount e2fsprogs
          # image builds: the pause binary and ES images' open-files shim (C), their ECK module (Java)
          gcc libc6-dev openjdk-17-jdk-headless)
mapfile -t missing < <(missing_packages "${packages[@]}")
[ ${#missing[@]} -eq 0 ] && exit 0
# Never let a package's maintainer script start the system containerd: up.sh runs its own
# instance with its own config, sockets and state directories.
policy=/usr/sbin/policy-rc.d
created_policy=0
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' > "$policy"; chmod +x "$policy"; created_policy=1
fi
trap '[ $created_policy = 1 ] && rm -f "$policy"' EXIT
apt_install "${missing[@]}"
