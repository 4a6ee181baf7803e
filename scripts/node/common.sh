# shellcheck shell=bash disable=SC2034  # sourced: its variables are for the scripts that source it
# Shared by up.sh and down.sh (sourced): where the node lives and small helpers.
NODE_DIR=${ESBENCH_NODE_DIR:-/var/lib/esbench-node}
RUN_DIR=/run/esbench-node
CONTAINERD_SOCK=$RUN_DIR/containerd/containerd.sock
# containerd's root (its images, their unpacked layers, its metadata) outlives the node, in the
# cache: a new node finds the images of the last one and imports only what changed. down.sh
# marks it clean (CONTAINERD_CLEAN) once no container is left in it; up.sh starts afresh from
# one not marked (a node that ended without down.sh).
CONTAINERD_ROOT=${ESBENCH_CACHE:-$HOME/.cache/esbench}/node-containerd
CONTAINERD_CLEAN=$CONTAINERD_ROOT/clean
NODE_NAME=esbench-node
# The pods' volumes (storage.sh): a sparse file, so only what they write takes host disk.
VOLUMES_SIZE=${ESBENCH_NODE_VOLUMES_SIZE:-32G}
SERVICE_CIDR=10.96.0.0/12
KUBERNETES_SERVICE_IP=10.96.0.1
CLUSTER_DNS_IP=10.96.0.10
POD_CIDR=10.244.0.0/16
NODE_POD_CIDR=10.244.0.0/24
CNI_BRIDGE=cni0
# etcd (client, peer, metrics), apiserver, kubelet (API, healthz), kube-proxy (metrics, healthz),
# controller-manager, scheduler, CoreDNS readiness.
NODE_PORTS=(2379 2380 2381 6443 10250 10248 10249 10256 10257 10259 8181)

die() { echo "${0##*/}: $*" >&2; exit 1; }
port_in_use() { ss -Hltn "sport = :$1" | grep -q .; }
ctr() { command ctr --address "$CONTAINERD_SOCK" --namespace k8s.io "$@"; }

# launch NAME ARGV...: a long-running node process in its own session (it outlives up.sh),
# logged to $NODE_DIR/logs/NAME.log, its pid recorded for down.sh.
launch() {
  local name=$1; shift
  setsid "$@" </dev/null >"$NODE_DIR/logs/$name.log" 2>&1 &
  echo "$name $!" >> "$NODE_DIR/pids"
}

# wait_for WHAT SECONDS COMMAND...: until COMMAND succeeds; on timeout show which process died.
wait_for() {
  local what=$1 timeout=$2; shift 2
  local deadline=$(( $(date +%s) + timeout ))
  until "$@" >/dev/null 2>&1; do
    if [ "$(date +%s)" -ge "$deadline" ]; then
      echo "timed out after ${timeout}s waiting for $what" >&2
      dead_processes >&2
      return 1
    fi
    sleep 0.5
  done
}

dead_processes() {
  local name pid
  [ -e "$NODE_DIR/pids" ] || return 0
  while read -r name pid; do
    kill -0 "$pid" 2>/dev/null && continue
    echo "--- $name (pid $pid) is not running; last lines of $NODE_DIR/logs/$name.log:"
    tail -n 20 "$NODE_DIR/logs/$name.log"
  done < "$NODE_DIR/pids"
}

node_ready() {
  [ "$(kubectl get node "$NODE_NAME" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]
}
