"""What cluster reuse saves an ExperimentSweep, on the offline node with real pods (`make bench`).

Runs one sweep of K cells that differ only in index.refreshInterval (the quickstart's spec:
8.7.1, smoke track, a 1Gi claim; repetitions 1, parallelism 1) twice, with clusterReuse true and
false, each in a fresh restricted namespace, and reports for each:
  clusters        distinct Elasticsearch resource names seen, polling every second
  wall            from the create call to the sweep's Succeeded, as seen by polling
  cluster wait    sum over the runs of status.clusterReadyTime - startTime
  race            sum over the runs of status.completionTime - clusterReadyTime
The environment is the e2e suite's, set up by tests/e2e/harness.py: a real single node
(scripts/node/up.sh), the real ECK operator and the chart installed with Helm, real
Elasticsearch and Rally pods. Needs root; takes ~15 min at K=3.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from esbench.api import models  # noqa: E402
from tests.e2e import harness  # noqa: E402
from tests.support.waiting import wait_for  # noqa: E402

REFRESH_INTERVALS = ["1s", "5s", "30s", "2s", "10s", "15s", "20s", "60s"]
SECONDS_PER_RUN = 900  # cluster start + a smoke race on 2 shared cores: 2-3 minutes


def seconds(start: str, end: str) -> float:
    return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()


def sweep_body(name: str, cells: int, reuse: bool) -> dict[str, Any]:
    template = yaml.safe_load((ROOT / "examples/quickstart.yaml").read_text())["spec"]
    assert template["elasticsearch"]["version"] == harness.ES_VERSION, "examples/quickstart.yaml moved on"
    template["elasticsearch"]["image"] = harness.es_image()
    return {"apiVersion": models.API_VERSION, "kind": models.SWEEP_KIND, "metadata": {"name": name},
            "spec": {"template": template, "repetitions": 1, "parallelism": 1, "clusterReuse": reuse,
                     "matrix": [{"field": "index.refreshInterval", "values": REFRESH_INTERVALS[:cells]}]}}


def measure(cluster: harness.Cluster, namespace: str, cells: int, reuse: bool) -> dict[str, Any]:
    custom, core = client.CustomObjectsApi(cluster.api), client.CoreV1Api(cluster.api)
    name = "reuse" if reuse else "own"
    seen: set[str] = set()

    def finished() -> dict[str, Any] | None:
        seen.update(es["metadata"]["name"] for es in custom.list_namespaced_custom_object(
            "elasticsearch.k8s.elastic.co", "v1", namespace, "elasticsearches")["items"])
        sweep = custom.get_namespaced_custom_object(models.GROUP, models.VERSION, namespace, models.SWEEP_PLURAL, name)
        return sweep if (sweep.get("status") or {}).get("phase") in ("Succeeded", "Failed") else None

    def diagnose() -> str:
        sweep = custom.get_namespaced_custom_object(models.GROUP, models.VERSION, namespace, models.SWEEP_PLURAL, name)
        pods = core.list_namespaced_pod(harness.OPERATOR_NAMESPACE).items
        log = core.read_namespaced_pod_log(pods[0].metadata.name, harness.OPERATOR_NAMESPACE, tail_lines=40)
        return f"sweep status: {json.dumps(sweep.get('status'))[:3000]}\noperator log:\n{log}"

    started = time.monotonic()
    custom.create_namespaced_custom_object(models.GROUP, models.VERSION, namespace, models.SWEEP_PLURAL,
                                           sweep_body(name, cells, reuse))
    sweep = wait_for(finished, cells * SECONDS_PER_RUN, what=f"sweep {name} to finish", interval=1,
                     diagnose=diagnose)
    wall = time.monotonic() - started
    if sweep["status"]["phase"] != "Succeeded":
        raise SystemExit(f"sweep {name} failed: {sweep['status'].get('message')}\n{diagnose()}")
    runs = [r["status"] for r in custom.list_namespaced_custom_object(
        models.GROUP, models.VERSION, namespace, models.PLURAL, label_selector=f"esbench.io/sweep={name}")["items"]]
    return {"reuse": reuse, "clusters": len(seen), "runs": len(runs), "wall": wall,
            "wait": sum(seconds(r["startTime"], r["clusterReadyTime"]) for r in runs),
            "race": sum(seconds(r["clusterReadyTime"], r["completionTime"]) for r in runs)}


def saving(reused: float, own: float) -> str:
    return f"{(own - reused) / own * 100:5.1f}%" if own else "    -"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=3, choices=range(1, len(REFRESH_INTERVALS) + 1),
                        metavar="K", help=f"cells (index.refreshInterval values), 1-{len(REFRESH_INTERVALS)}")
    parser.add_argument("--keep-node", action="store_true", help="leave the node up afterwards")
    args = parser.parse_args()

    rows = []
    with harness.obtain_cluster(keep=True if args.keep_node else None) as cluster:
        print("images ...", file=sys.stderr, flush=True)
        cluster.load_images()
        harness.install_eck(cluster)
        with harness.installed_operator(cluster, resync_seconds=2):
            for reuse in (True, False):
                print(f"sweep of {args.cells} cells, clusterReuse {str(reuse).lower()} ...", file=sys.stderr,
                      flush=True)
                with harness.restricted_namespace(cluster, prefix="bench-") as namespace:
                    rows.append(measure(cluster, namespace, args.cells, reuse))

    print(f"ExperimentSweep of {args.cells} cells (index.refreshInterval {', '.join(REFRESH_INTERVALS[:args.cells])};"
          f" smoke track, {harness.ES_VERSION}, 1 repetition, parallelism 1) on the offline node:")
    print(f"{'clusterReuse':<13} {'runs':>4} {'clusters':>8} {'wall s':>8} {'cluster wait s':>15} {'race s':>8}")
    for row in rows:
        print(f"{str(row['reuse']).lower():<13} {row['runs']:>4} {row['clusters']:>8} {row['wall']:>8.0f} "
              f"{row['wait']:>15.0f} {row['race']:>8.0f}")
    reused, own = rows
    print(f"{'saving':<13} {'':>4} {own['clusters'] - reused['clusters']:>8} {saving(reused['wall'], own['wall']):>8} "
          f"{saving(reused['wait'], own['wait']):>15} {saving(reused['race'], own['race']):>8}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
