#!/usr/bin/env bash
# Tears down the single node of up.sh completely, also after a failed or interrupted up.sh:
# every container and process it started, its network namespaces and mounts, the cni0 bridge,
# kube-proxy's KUBE-* and the CNI plugins' CNI-* iptables chains, and its state folders; only
# containerd's root, which holds the images, stays in the cache (scripts/node/common.sh).
# Safe to run twice. Touches nothing it did not create (the host's own containerd, Docker's
# chains and other iptables rules stay).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo_root=$(cd "$here/../.." && pwd)
source "$repo_root/scripts/lib.sh"
set +e  # lib.sh's -e: here every step runs, whether or not the one before found anything
source "$here/common.sh"
[ "$(id -u)" = 0 ] || die "must run as root"

pid_of() { [ -e "$NODE_DIR/pids" ] && awk -v n="$1" '$1 == n {print $2}' "$NODE_DIR/pids"; }
stop() {  # stop NAME...: SIGTERM to all at once, then SIGKILL to those still there after 10 s
  local name pid alive pids=()
  for name in "$@"; do
    pid=$(pid_of "$name")
    [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && pids+=("$pid")
  done
  for _ in $(seq 1 100); do
    alive=()
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive+=("$pid"); done
    [ ${#alive[@]} -eq 0 ] && return 0
    sleep 0.1
  done
  kill -KILL "${alive[@]}" 2>/dev/null
  sleep 0.2
}

# The kubelet first, so it restarts nothing; then every container of our containerd (their
# shims exit with them).
stop kubelet
if [ -S "$CONTAINERD_SOCK" ]; then
  for task in $(ctr tasks ls -q 2>/dev/null); do ctr tasks kill --signal SIGKILL "$task" >/dev/null 2>&1; done
  sleep 1
  for task in $(ctr tasks ls -q 2>/dev/null); do ctr tasks delete --force "$task" >/dev/null 2>&1; done
  for container in $(ctr containers ls -q 2>/dev/null); do ctr containers delete "$container" >/dev/null 2>&1; done
  containers_left=$(ctr containers ls -q 2>/dev/null || echo unknown)
fi
stop coredns kube-proxy kube-scheduler kube-controller-manager kube-apiserver containerd
stop etcd
# containerd's root stays, for the next node's images, if no container is left in it.
[ -d "$CONTAINERD_ROOT" ] && [ -z "${containers_left-unknown}" ] && : > "$CONTAINERD_CLEAN"
# Shims of our containerd that outlived it: found by our socket path on their command line.
for pid in $(pgrep -f -- "containerd-shim-runc-v2 .*-address $CONTAINERD_SOCK" || true); do kill -KILL "$pid" 2>/dev/null; done

# Mounts under our folders (container rootfs, netns, kubelet volumes), deepest first.
for _ in 1 2 3; do
  mounts=$(awk -v a="$NODE_DIR" -v b="$RUN_DIR" -v c="$CONTAINERD_ROOT" \
    'index($2, a) == 1 || index($2, b) == 1 || index($2, c) == 1 {print $2}' /proc/self/mounts | sort -r)
  [ -z "$mounts" ] && break
  for m in $mounts; do umount -l "$m" 2>/dev/null; done
done

# Network: the bridge (its veths went with the namespaces), kube-proxy's rules (its own
# --cleanup knows them all), then the CNI plugins' CNI-* chains and the rules that jump to them.
ip link delete "$CNI_BRIDGE" 2>/dev/null
[ -x "$k8s_bin/kube-proxy" ] && "$k8s_bin/kube-proxy" --cleanup >/dev/null 2>&1
# IPv6 too: the kubelet and kube-proxy make their canary and firewall chains in both families.
for ipt in iptables ip6tables; do
  command -v "$ipt" >/dev/null || continue
  for table in filter nat mangle; do
    # Rules in any chain that jump to a CNI-*/KUBE-* chain: delete them (same spec with -D).
    "$ipt" -t "$table" -S 2>/dev/null | grep -E -- '-j (CNI|KUBE)-' | grep '^-A' | while read -r rule; do
      eval "$ipt -t $table ${rule/#-A/-D}" 2>/dev/null
    done
    chains=$("$ipt" -t "$table" -S 2>/dev/null | awk '$1 == "-N" && $2 ~ /^(CNI|KUBE)-/ {print $2}')
    for chain in $chains; do "$ipt" -t "$table" -F "$chain" 2>/dev/null; done
    for chain in $chains; do "$ipt" -t "$table" -X "$chain" 2>/dev/null; done
  done
done

rm -rf "$NODE_DIR" "$RUN_DIR"
leftover=$( (iptables-save; ip6tables-save) 2>/dev/null | grep -cE '(CNI|KUBE)-' || true)
[ "$leftover" = 0 ] || echo "down.sh: $leftover ip(6)tables lines still mention CNI-/KUBE-" >&2
echo "node down" >&2
