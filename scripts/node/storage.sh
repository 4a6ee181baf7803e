#!/usr/bin/env bash
# Dynamic volumes on the node of up.sh, as on any cluster: Rancher's local-path provisioner
# (built from its Go module, scripts/local-path-provisioner.sh), installed with its own Helm chart
# into namespace local-path-storage, its StorageClass `local-path` the default. A claim binds when
# its pod is scheduled; the volume is a folder under $NODE_DIR/local-path, made and removed by the
# provisioner's helper pods; down.sh removes the folder with the node. Run by up.sh; idempotent.
# The folder is a filesystem of its own (ext4 in a sparse file, on a loop device), so that the
# disk Elasticsearch's watermarks judge is the pods' volumes, not the host's disk, whose fill
# (caches, other work) would otherwise leave a new index unassigned on a fuller host.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo_root=$(cd "$here/../.." && pwd)
source "$here/common.sh"
source "$repo_root/scripts/lib.sh"
export KUBECONFIG=${KUBECONFIG:-$NODE_DIR/admin.kubeconfig}
need_go

volumes=$NODE_DIR/local-path
if ! mountpoint -q "$volumes"; then
  mkdir -p "$volumes"
  backing=$NODE_DIR/local-path.img
  truncate -s "$VOLUMES_SIZE" "$backing"
  mkfs.ext4 -q -F -m 0 "$backing"
  # Direct I/O: the pods' reads reach the disk as on a node's own, not through a second page cache
  # of the backing file outside their memory cgroups.
  if device=$(losetup --find --show --direct-io=on --sector-size 4096 "$backing"); then
    mount "$device" "$volumes"
    losetup --detach "$device"  # autoclear: the device goes once down.sh unmounts it
  else
    rm -f "$backing"
    echo "storage.sh: no loop device here: the volumes are on the host's disk, and Elasticsearch's disk" \
      "watermarks judge its fill" >&2
  fi
fi
archive=$(bash "$repo_root/scripts/images/local-path-provisioner.sh")
bash "$repo_root/scripts/images/import.sh" "$archive"
version=$LOCAL_PATH_PROVISIONER_VERSION
module=$(go_module_dir "github.com/rancher/local-path-provisioner@$version")
image=docker.io/local/local-path-provisioner
"$(bash "$repo_root/scripts/helm.sh")" upgrade --install local-path-provisioner "$module/deploy/chart/local-path-provisioner" \
  --namespace local-path-storage --create-namespace \
  --set image.repository=$image --set "image.tag=$version" --set image.pullPolicy=Never \
  --set helperImage.repository=$image --set "helperImage.tag=$version" \
  --set storageClass.defaultClass=true \
  --set "nodePathMap[0].node=DEFAULT_PATH_FOR_NON_LISTED_NODES" --set "nodePathMap[0].paths={$volumes}" \
  --wait --timeout 120s >/dev/null
echo "local-path provisioner ${version#v} installed: default StorageClass local-path ($volumes, $VOLUMES_SIZE)" >&2
