#!/usr/bin/env bash
# Brings up a whole real single-node Kubernetes v1.32.4 as host processes, for the offline
# end-to-end tests (tests/e2e) on machines without a container registry, where kind cannot run:
#   etcd, kube-apiserver, kube-controller-manager, kube-scheduler (control plane)
#   containerd + runc, kubelet, kube-proxy (iptables), CNI bridge (node)
#   CoreDNS (cluster DNS; a host process behind the usual kube-dns Service, 10.96.0.10)
#   local-path provisioner (default StorageClass `local-path`; storage.sh)
# Binaries: scripts/k8s-binaries.sh, scripts/etcd.sh and scripts/coredns.sh (built from the Go module proxy,
# cached), Debian packages from scripts/node/packages.sh. The pause image is built locally
# (scripts/images/pause.sh): nothing is pulled.
#
# Usage: scripts/node/up.sh      then  export KUBECONFIG=$ESBENCH_NODE_DIR/admin.kubeconfig
#        scripts/node/down.sh    stops everything and removes every trace (run it even after a failed up)
# State: $ESBENCH_NODE_DIR (default /var/lib/esbench-node); sockets and netns under /run/esbench-node;
# containerd's root, with the images, in $ESBENCH_CACHE/node-containerd (kept by down.sh).
# Fixed ports (kubelet 10250 etc. cannot move without breaking `kubectl logs`) are checked first.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo_root=$(cd "$here/../.." && pwd)
source "$repo_root/scripts/lib.sh"
source "$here/common.sh"

[ "$(id -u)" = 0 ] || die "must run as root (containers, iptables, mounts)"
[ -e "$NODE_DIR/pids" ] && die "a node is already up (or was not torn down): run scripts/node/down.sh first"
for port in "${NODE_PORTS[@]}"; do
  port_in_use "$port" && die "port $port is in use: another Kubernetes or a leftover node? (scripts/node/down.sh)"
done

start_time=$(date +%s)
bash "$here/packages.sh"
bash "$repo_root/scripts/k8s-binaries.sh" >/dev/null
COREDNS=$(bash "$repo_root/scripts/coredns.sh" | tail -1)
ETCD=$(bash "$repo_root/scripts/etcd.sh" | tail -1)
PAUSE_ARCHIVE=$(bash "$repo_root/scripts/images/pause.sh")

node_ip=$(ip -4 route get 1.1.1.1 | sed -n 's/.* src \([0-9.]*\).*/\1/p')
[ -n "$node_ip" ] || die "cannot find this host's IPv4 address (no default route?)"
# CoreDNS binds port 53 of the node address only (a local resolver on 127.0.0.x may stay).
ss -Hlnu 'sport = :53' | awk '{print $4}' | grep -qE "^($node_ip|0\.0\.0\.0|\*|\[::\]):53$" \
  && die "port 53 of $node_ip is in use: CoreDNS needs it"

mkdir -p "$NODE_DIR"/{pki,logs,etcd,kubelet,cni/net.d,cni/ipam,containerd} "$RUN_DIR"
: > "$NODE_DIR/pids"
echo "$node_ip" > "$NODE_DIR/node-ip"
trap 'echo "up.sh failed; logs in $NODE_DIR/logs. Tear down with scripts/node/down.sh" >&2' ERR

# ---- PKI: one CA; a distinct client identity per component, as kubeadm does, so RBAC and the
# Node authorizer see the real users (system:node:NAME, system:kube-scheduler, ...).
pki=$NODE_DIR/pki
openssl_quiet() { openssl "$@" 2>/dev/null; }
openssl_quiet req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 30 \
  -subj "/CN=esbench-node-ca" -keyout "$pki/ca.key" -out "$pki/ca.crt"
# issue NAME SUBJECT [SANS]: a certificate signed by the CA (client and server usage).
issue() {
  local name=$1 subject=$2 sans=${3:-}
  openssl_quiet req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "$subject" \
    -keyout "$pki/$name.key" -out "$pki/$name.csr"
  {
    echo "basicConstraints=CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    echo "extendedKeyUsage=serverAuth,clientAuth"
    [ -n "$sans" ] && echo "subjectAltName=$sans"
  } > "$pki/$name.ext"
  openssl_quiet x509 -req -in "$pki/$name.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
    -days 30 -extfile "$pki/$name.ext" -out "$pki/$name.crt"
}
issue apiserver "/CN=kube-apiserver" \
  "DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,DNS:localhost,IP:127.0.0.1,IP:$KUBERNETES_SERVICE_IP,IP:$node_ip"
issue apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client"
issue admin "/O=system:masters/CN=esbench-admin"
issue controller-manager "/CN=system:kube-controller-manager"
issue scheduler "/CN=system:kube-scheduler"
issue kube-proxy "/CN=system:kube-proxy"
issue kubelet "/O=system:nodes/CN=system:node:$NODE_NAME" "DNS:$NODE_NAME,IP:$node_ip,IP:127.0.0.1"
openssl_quiet genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$pki/sa.key"
openssl_quiet pkey -in "$pki/sa.key" -pubout -out "$pki/sa.pub"

kubeconfig() {  # kubeconfig IDENTITY -> $NODE_DIR/IDENTITY.kubeconfig
  cat > "$NODE_DIR/$1.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: esbench-node
  cluster: {server: "https://$node_ip:6443", certificate-authority: "$pki/ca.crt"}
users:
- name: $1
  user: {client-certificate: "$pki/$1.crt", client-key: "$pki/$1.key"}
contexts:
- name: esbench-node
  context: {cluster: esbench-node, user: $1, namespace: default}
current-context: esbench-node
EOF
}
for identity in admin controller-manager scheduler kube-proxy kubelet; do kubeconfig "$identity"; done
export KUBECONFIG=$NODE_DIR/admin.kubeconfig

# ---- control plane
launch etcd "$ETCD" --name esbench-node --data-dir "$NODE_DIR/etcd" \
  --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
  --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
  --initial-cluster esbench-node=http://127.0.0.1:2380 --listen-metrics-urls http://127.0.0.1:2381

launch kube-apiserver "$k8s_bin/kube-apiserver" \
  --etcd-servers=http://127.0.0.1:2379 --bind-address=0.0.0.0 --secure-port=6443 \
  --advertise-address="$node_ip" --allow-privileged=true \
  --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction \
  --client-ca-file="$pki/ca.crt" --tls-cert-file="$pki/apiserver.crt" --tls-private-key-file="$pki/apiserver.key" \
  --kubelet-client-certificate="$pki/apiserver-kubelet-client.crt" \
  --kubelet-client-key="$pki/apiserver-kubelet-client.key" \
  --kubelet-preferred-address-types=InternalIP,Hostname \
  --service-account-issuer=https://kubernetes.default.svc.cluster.local \
  --service-account-key-file="$pki/sa.pub" --service-account-signing-key-file="$pki/sa.key" \
  --service-cluster-ip-range="$SERVICE_CIDR" --profiling=false
wait_for "kube-apiserver ready" 60 kubectl get --raw /readyz

launch kube-controller-manager "$k8s_bin/kube-controller-manager" \
  --kubeconfig="$NODE_DIR/controller-manager.kubeconfig" \
  --authentication-kubeconfig="$NODE_DIR/controller-manager.kubeconfig" \
  --authorization-kubeconfig="$NODE_DIR/controller-manager.kubeconfig" \
  --bind-address=127.0.0.1 --leader-elect=false --use-service-account-credentials=true \
  --service-account-private-key-file="$pki/sa.key" --root-ca-file="$pki/ca.crt" \
  --cluster-signing-cert-file="$pki/ca.crt" --cluster-signing-key-file="$pki/ca.key" \
  --service-cluster-ip-range="$SERVICE_CIDR" --cluster-cidr="$POD_CIDR" --allocate-node-cidrs=false \
  --profiling=false

launch kube-scheduler "$k8s_bin/kube-scheduler" \
  --kubeconfig="$NODE_DIR/scheduler.kubeconfig" \
  --authentication-kubeconfig="$NODE_DIR/scheduler.kubeconfig" \
  --authorization-kubeconfig="$NODE_DIR/scheduler.kubeconfig" \
  --bind-address=127.0.0.1 --leader-elect=false --profiling=false

# ---- container runtime: our own containerd instance (never the host's), with its state,
# sockets and network namespaces under our folders so down.sh can remove all of it.
cat > "$NODE_DIR/containerd/config.toml" <<EOF
version = 2
root = "$CONTAINERD_ROOT"
state = "$RUN_DIR/containerd"
[grpc]
  address = "$CONTAINERD_SOCK"
[ttrpc]
  address = "$RUN_DIR/containerd/containerd.sock.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$NODE_DIR/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "docker.io/local/pause:3.10"
  # This VM lacks CAP_SYS_RESOURCE: without this every sandbox fails with an opaque runc error.
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$NODE_DIR/cni/net.d"
EOF
# The firewall plugin: Docker (if present) sets the FORWARD policy to DROP; it admits pod traffic.
cat > "$NODE_DIR/cni/net.d/10-esbench.conflist" <<EOF
{"cniVersion": "0.4.0", "name": "esbench", "plugins": [
  {"type": "bridge", "bridge": "$CNI_BRIDGE", "isGateway": true, "ipMasq": true, "hairpinMode": true,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "$NODE_POD_CIDR"}]], "routes": [{"dst": "0.0.0.0/0"}],
            "dataDir": "$NODE_DIR/cni/ipam"}},
  {"type": "portmap", "capabilities": {"portMappings": true}},
  {"type": "firewall"}
]}
EOF
[ -e "$CONTAINERD_CLEAN" ] || rm -rf "$CONTAINERD_ROOT"
rm -f "$CONTAINERD_CLEAN"
launch containerd /usr/bin/containerd --config "$NODE_DIR/containerd/config.toml"
wait_for "containerd" 30 ctr version
bash "$repo_root/scripts/images/import.sh" "$PAUSE_ARCHIVE"  # kept from the last node: skipped

# ---- kubelet
cat > "$NODE_DIR/kubelet/config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: "$pki/ca.crt"}
authorization: {mode: Webhook}
tlsCertFile: "$pki/kubelet.crt"
tlsPrivateKeyFile: "$pki/kubelet.key"
containerRuntimeEndpoint: "unix://$CONTAINERD_SOCK"
cgroupDriver: cgroupfs
failSwapOn: false
clusterDomain: cluster.local
clusterDNS: ["$CLUSTER_DNS_IP"]
resolvConf: /etc/resolv.conf
port: 10250
healthzBindAddress: 127.0.0.1
healthzPort: 10248
readOnlyPort: 0
serializeImagePulls: false
# A shared test machine: only evict when truly out of resources, never stop to collect images.
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", nodefs.inodesFree: "1%", imagefs.available: "1%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
EOF
launch kubelet "$k8s_bin/kubelet" --config="$NODE_DIR/kubelet/config.yaml" \
  --kubeconfig="$NODE_DIR/kubelet.kubeconfig" --root-dir="$NODE_DIR/kubelet" \
  --hostname-override="$NODE_NAME" --node-ip="$node_ip"

# ---- kube-proxy (iptables mode)
cat > "$NODE_DIR/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: "$NODE_DIR/kube-proxy.kubeconfig"}
mode: iptables
clusterCIDR: "$POD_CIDR"
hostnameOverride: "$NODE_NAME"
bindAddress: "$node_ip"
metricsBindAddress: 127.0.0.1:10249
healthzBindAddress: 127.0.0.1:10256
# Leave the host's conntrack sysctls alone (a shared VM; some are read-only).
conntrack: {maxPerCore: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
EOF
launch kube-proxy "$k8s_bin/kube-proxy" --config="$NODE_DIR/kube-proxy.yaml"

# ---- cluster DNS: CoreDNS on the host (port 53 of the node IP), reached by pods through the
# usual kube-dns Service (10.96.0.10) whose endpoint is that address. It reads the API as
# the admin identity (the cluster is throwaway; a CoreDNS pod would get a ClusterRole).
cat > "$NODE_DIR/Corefile" <<EOF
.:53 {
    bind $node_ip
    errors
    ready 127.0.0.1:8181
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig $NODE_DIR/admin.kubeconfig esbench-node
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
    forward . /etc/resolv.conf
    cache 30
}
EOF
launch coredns "$COREDNS" -conf "$NODE_DIR/Corefile"
kubectl apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Service
metadata:
  name: kube-dns
  namespace: kube-system
  labels: {k8s-app: kube-dns, kubernetes.io/name: CoreDNS}
spec:
  clusterIP: $CLUSTER_DNS_IP
  ports:
  - {name: dns, port: 53, protocol: UDP, targetPort: 53}
  - {name: dns-tcp, port: 53, protocol: TCP, targetPort: 53}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: kube-dns-host
  namespace: kube-system
  labels: {kubernetes.io/service-name: kube-dns, endpointslice.kubernetes.io/managed-by: esbench-node}
addressType: IPv4
endpoints:
- addresses: ["$node_ip"]
  conditions: {ready: true}
ports:
- {name: dns, port: 53, protocol: UDP}
- {name: dns-tcp, port: 53, protocol: TCP}
EOF

wait_for "node $NODE_NAME Ready" 120 node_ready
wait_for "CoreDNS ready" 30 curl -fsS http://127.0.0.1:8181/ready
# The service account controller makes `default` in each namespace; pods need it.
wait_for "default service account" 30 kubectl -n default get serviceaccount default
# A default StorageClass with a real provisioner, so claims bind as on any cluster.
KUBECONFIG=$NODE_DIR/admin.kubeconfig bash "$here/storage.sh"
echo "node up in $(( $(date +%s) - start_time ))s; export KUBECONFIG=$NODE_DIR/admin.kubeconfig" >&2
echo "$NODE_DIR/admin.kubeconfig"
