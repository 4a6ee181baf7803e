#!/usr/bin/env bash
# checkov on what esbench deploys: the chart rendered by `helm template` with default values,
# the chart with its NetworkPolicies, and the Rally Job the operator builds for
# examples/quickstart.yaml (scripts/render-rally-job.py, the operator's own builder). Settings
# and accepted exceptions: .checkov.yaml. Fails if any other check fails on any of the three.
# Usage: scripts/checkov.sh [VENV]   (the operator's virtualenv; default: <repo>/.venv)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
venv=${1:-$here/.venv}
bash "$here/scripts/checkov-env.sh"
helm=$(bash "$here/scripts/helm.sh")
rendered=$(mktemp -d)
trap 'rm -rf "$rendered"' EXIT

"$helm" template esbench "$here/charts/esbench" >"$rendered/chart.yaml"
"$helm" template esbench "$here/charts/esbench" --set networkPolicy.enabled=true \
  --set networkPolicy.experiments.enabled=true --set 'watchNamespaces={benchmarks}' \
  >"$rendered/chart-network-policy.yaml"
"$venv/bin/python" "$here/scripts/render-rally-job.py" >"$rendered/rally-job.yaml"

# No look for a newer checkov: the scan runs offline.
export CKV_SKIP_PACKAGE_UPDATE_CHECK=true
status=0
for manifests in chart chart-network-policy rally-job; do
  echo "checkov: $manifests"
  "$here/.venv-checkov/bin/checkov" --config-file "$here/.checkov.yaml" --file "$rendered/$manifests.yaml" || status=1
done
exit $status
