#!/usr/bin/env bash
# The Kubernetes path of the quickstart, offline, on the single node of up.sh: builds and loads
# the images, installs the real ECK operator (scripts/eck-install.sh: its own chart) and the esbench chart
# with Helm, applies examples/quickstart.yaml with one change, `spec.elasticsearch.image` set to
# the offline image (scripts/images/elasticsearch.sh: the official ones cannot be pulled here),
# and waits for its results. The node stays up to explore (KUBECONFIG is printed); remove
# everything with scripts/node/down.sh.
# Usage: scripts/node/demo.sh [PYTHON]   (PYTHON: the operator's test venv, default .venv/bin/python)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo_root=$(cd "$here/../.." && pwd)
source "$repo_root/scripts/lib.sh"
source "$here/common.sh"
python=${1:-$repo_root/.venv/bin/python}
export KUBECONFIG=$NODE_DIR/admin.kubeconfig
[ -e "$KUBECONFIG" ] || bash "$here/up.sh" >/dev/null

bash "$repo_root/scripts/images/import.sh" "$(bash "$repo_root/scripts/images/esbench.sh")" \
  "$(bash "$repo_root/scripts/images/elasticsearch.sh" 8.7.1)"
bash "$repo_root/scripts/eck-install.sh"
kubectl get namespace esbench-system >/dev/null 2>&1 || kubectl create namespace esbench-system >/dev/null
kubectl label --overwrite namespace esbench-system pod-security.kubernetes.io/enforce=restricted >/dev/null
"$(bash "$repo_root/scripts/helm.sh")" upgrade --install esbench "$repo_root/charts/esbench" \
  --namespace esbench-system --set image.repository=docker.io/local/esbench --set image.tag=0.1.0 \
  --set image.pullPolicy=Never --wait --timeout 180s >/dev/null
kubectl delete esx quickstart --ignore-not-found --wait >/dev/null  # a fresh run each time
"$python" -c 'import sys, yaml
experiment = yaml.safe_load(open(sys.argv[1]))
experiment["spec"]["elasticsearch"]["image"] = sys.argv[2]
print(yaml.safe_dump(experiment))' "$repo_root/examples/quickstart.yaml" docker.io/local/elasticsearch:8.7.1 |
  kubectl apply -f -
# Progress: each phase as it is reached, with the time since the Experiment was applied.
started=$SECONDS shown=
while :; do
  phase=$(kubectl get esx quickstart -o 'jsonpath={.status.phase}')
  if [ "$phase" != "$shown" ]; then
    printf '%4ds  %-13s %s\n' $((SECONDS - started)) "${phase:-Pending}" \
      "$(kubectl get esx quickstart -o 'jsonpath={.status.message}' | cut -c -120)"
    shown=$phase
  fi
  [[ $phase == Succeeded || $phase == Failed ]] && break
  sleep 2
done
kubectl get esx quickstart
"$(dirname "$python")/esbench" show quickstart --namespace default
echo "export KUBECONFIG=$KUBECONFIG   # explore; scripts/node/down.sh removes everything" >&2
[ "$phase" = Succeeded ]
