"""The operator's own overhead on a real kube-apiserver (`make bench`).

What the operator is held to are counts and ratios measured in this one run, which do not move
with how fast the shared host happens to be:
- the API requests one Experiment costs over its whole life, by verb and resource, as the API
  server's audit log recorded them (REQUEST_BUDGET: today's counts; a change that adds a call
  per Experiment exceeds it);
- every Experiment of every load terminal, none Failed, and no child made twice (one cluster
  and one Job created per Experiment, from the audit log);
- the operator's CPU per Experiment as a fraction of the API server's for the same
  Experiments (CPU_RATIO_BUDGET), and its peak RSS (TARGET_RSS_MIB);
- one shared cluster for a sweep, and a sweep status that fits in etcd with room to spare.
Latencies are printed, not held to a target: on 2 cores shared with the control plane they
follow the host's speed (one target of 250 ms at 1,000 in flight was met in 1 of 6 runs of the
same code). Measured, from watch events observed by this process:
  created -> ES resource created      (Experiment create call returned -> ES ADDED seen)
  ES ready -> Job created             (stand-in ECK's Ready status written -> Job ADDED seen)
  Job finished -> results in status   (Job Complete seen -> Experiment Succeeded or Failed seen)
over LATENCY_EXPERIMENTS Experiments, in batches, in a namespace of their own (the request
counts are theirs); then four loads:
- CONCURRENT_EXPERIMENTS in flight, one step at a time for all of them at ARRIVAL_RATE per second
  (open loop: the driver does not wait for the operator): a stress.
- CONCURRENT_EXPERIMENTS created at once, reported as a throughput, with the operator's peak RSS
  (VmHWM).
- A steady state, once the stresses' namespace has been deleted with all it held:
  CONCURRENT_EXPERIMENTS in flight, each living LIFETIME_SECONDS, so that creates, provisions
  (by the stand-in ECK), readies and finishes all arrive at once, each at
  CONCURRENT_EXPERIMENTS / LIFETIME_SECONDS per second; with it, how busy the cores were while
  the measured steps began (the host's, each process's) and the CPU each Experiment cost the API
  server and the operator.
- One ExperimentSweep of SWEEP_CELLS cells x SWEEP_REPETITIONS runs on one shared cluster: the
  hand-off from one run's end to the next run's Job (the sweep's own overhead per run), and the
  size of the sweep's status.
ECK's controller and the kubelet are stood in for as in the integration tests; the API server,
controller-manager and operator process are real, and all of them share this machine's cores.
The operator acts as the chart's ServiceAccount (its token, its RBAC, its admission policy), as
it would in a cluster: not as the test harness's admin, whose client certificate the API server
verifies at every request and whose group skips RBAC.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from itertools import pairwise
from pathlib import Path

import yaml
from kubernetes import client

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from esbench.api import models  # noqa: E402
from esbench.api.race_report import RaceReport, encode_report  # noqa: E402
from esbench.runner.results import summarize  # noqa: E402
from tests.support import reflector  # noqa: E402
from tests.support.controlplane import ControlPlane, eck_crd_path  # noqa: E402
from tests.support.experiments import successful_race_json  # noqa: E402
from tests.support.helm import Helm, helm_binary_path, operator_access  # noqa: E402
from tests.support.operator_process import OperatorProcess  # noqa: E402
from tests.support.standin_eck import StandinEck  # noqa: E402
from tests.support.standin_kubelet import StandinKubelet  # noqa: E402
from tests.support.waiting import wait_for  # noqa: E402

LATENCY_EXPERIMENTS = int(os.environ.get("BENCH_LATENCY_EXPERIMENTS", "50"))
BATCH = 10
CONCURRENT_EXPERIMENTS = int(os.environ.get("BENCH_CONCURRENT_EXPERIMENTS", "1000"))
PROBE_EXPERIMENTS = int(os.environ.get("BENCH_PROBE_EXPERIMENTS", "100"))  # created while the rest are in flight
ARRIVAL_RATE = float(os.environ.get("BENCH_ARRIVAL_RATE", "20"))  # per second, for each step
# Shorter than any real Experiment: the e2e smoke race, cluster start included, takes 2-3 minutes here.
LIFETIME_SECONDS = float(os.environ.get("BENCH_LIFETIME_SECONDS", "120"))
PROVISIONED_AFTER_SECONDS = 2  # ECK's Service, Secrets and first status, seconds after a create
STEADY_MEASURED = int(os.environ.get("BENCH_STEADY_MEASURED", "500"))  # of each step, in the steady state
SWEEP_CELLS = int(os.environ.get("BENCH_SWEEP_CELLS", "20"))
SWEEP_REPETITIONS = int(os.environ.get("BENCH_SWEEP_REPETITIONS", "5"))
TARGET_STATUS_BYTES = 512 * 1024  # etcd takes 1.5 MiB per object; leave room
TARGET_RSS_MIB = 300
# The operator's requests about one Experiment's objects over its whole life, by (verb, resource):
# today's counts. Held to within half a request each, so that one call more per Experiment fails.
REQUEST_BUDGET = {
    "get experiments": 4, "patch experiments/status": 4, "create events": 4,
    "create elasticsearches": 1, "create jobs": 1, "list pods": 2, "get pods/log": 2,
    "create configmaps": 1, "delete elasticsearches": 1,
}
CPU_RATIO_BUDGET = 0.45  # the operator's CPU per Experiment / the API server's, in the steady state


class Observer:
    """First time each named thing was seen, from watches running in background threads."""

    def __init__(self, api_client: client.ApiClient, namespace: str):
        self.custom = client.CustomObjectsApi(api_client)
        self.batch = client.BatchV1Api(api_client)
        self.namespace = namespace
        self.seen: dict[tuple[str, str], float] = {}
        self.lock = threading.Lock()
        self.stop = threading.Event()
        for target in (self._experiments, self._clusters, self._jobs):
            threading.Thread(target=target, daemon=True).start()

    def _mark(self, what: str, name: str) -> None:
        with self.lock:
            self.seen.setdefault((what, name), time.monotonic())

    def _stream(self, list_call, *args, on_event):
        reflector.reflect(list_call, *args, on_event=on_event, stopping=self.stop, name="observer")

    def _experiments(self):
        def on_event(kind, experiment):
            phase = (experiment.get("status") or {}).get("phase")
            if phase in ("Succeeded", "Failed"):
                self._mark(phase, experiment["metadata"]["name"])
                self._mark("terminal", experiment["metadata"]["name"])
        self._stream(self.custom.list_namespaced_custom_object, models.GROUP, models.VERSION, self.namespace,
                     models.PLURAL, on_event=on_event)

    def _clusters(self):
        self._stream(self.custom.list_namespaced_custom_object, "elasticsearch.k8s.elastic.co", "v1",
                     self.namespace, "elasticsearches",
                     on_event=lambda kind, es: self._mark("es", es["metadata"]["name"]))

    def _jobs(self):
        def on_event(kind, job):
            experiment = job["metadata"]["labels"]["esbench.io/experiment"]
            self._mark("job", experiment)
            if any(c["type"] == "Complete" and c["status"] == "True" for c in (job.get("status") or {}).get("conditions") or []):
                self._mark("complete", experiment)
        self._stream(self.batch.list_namespaced_job, self.namespace, on_event=on_event)

    def wait(self, what: str, names: list[str], timeout: float = 120) -> None:
        def missing() -> list[str]:
            return [n for n in names if (what, n) not in self.seen]

        wait_for(lambda: not missing(), timeout, what=f"{len(names)} to reach {what}", interval=0.05,
                 diagnose=lambda: f"{len(missing())} never reached {what}: {missing()[:5]}")

    def failed(self, names: list[str], timeout: float = 120) -> int:
        """How many of these ended Failed, once all have ended."""
        self.wait("terminal", names, timeout)
        return sum(("Failed", n) in self.seen for n in names)


def experiment(name: str) -> dict:
    return {"apiVersion": models.API_VERSION, "kind": models.KIND, "metadata": {"name": name},
            "spec": {"elasticsearch": {"version": "8.15.3"}, "workload": {"track": "smoke"}}}


def sweep(name: str) -> dict:
    """SWEEP_CELLS cells that differ in a track parameter only: one shared cluster, runs in turn."""
    return {"apiVersion": models.API_VERSION, "kind": models.SWEEP_KIND, "metadata": {"name": name}, "spec": {
        "template": {"elasticsearch": {"version": "8.15.3"}, "workload": {"track": "smoke"}},
        "matrix": [{"field": "workload.trackParams.doc_count", "values": list(range(1000, 1000 + SWEEP_CELLS))}],
        "repetitions": SWEEP_REPETITIONS}}


def finish_every_job(kubelet: StandinKubelet, batch: client.BatchV1Api, namespace: str, log: str,
                     stop: threading.Event) -> None:
    """Plays the Rally pods: every Job of the namespace finishes with a successful report."""
    finished: set[str] = set()
    while not stop.is_set():
        for job in batch.list_namespaced_job(namespace).items:
            if job.metadata.name not in finished:
                kubelet.finish_job_pod(namespace, job.metadata.name, log, 0)
                finished.add(job.metadata.name)
        time.sleep(0.05)


def at_fixed_rate(pool: ThreadPoolExecutor, names: list[str], rate: float, action, start: float | None = None) -> None:
    """Start ACTION for each name at RATE per second from START (now if None), whether or not the
    earlier ones are done."""
    start = time.monotonic() if start is None else start
    futures = []
    for i, name in enumerate(names):
        time.sleep(max(0.0, start + i / rate - time.monotonic()))  # pacing, not waiting for a condition
        futures.append(pool.submit(action, name))
    for future in futures:
        future.result()


def print_steps(observer: Observer, created: dict[str, float], create_calls: dict[str, float], ready: dict[str, float],
                created_names: list[str], ready_names: list[str], finished_names: list[str]) -> None:
    """Each step's latency over the Experiments named for it, the rate at which it began, and how
    long their create calls took (the API server's admission, before the first step begins)."""
    # Each step: when it began for each Experiment, and when the operator had taken it.
    steps = {
        "created -> ES resource created": ([created[n] for n in created_names],
                                           [observer.seen[("es", n)] for n in created_names]),
        "ES ready -> Job created": ([ready[n] for n in ready_names], [observer.seen[("job", n)] for n in ready_names]),
        "Job finished -> results in status": ([observer.seen[("complete", n)] for n in finished_names],
                                              [observer.seen[("terminal", n)] for n in finished_names]),
    }
    print(f"{'step':<36} {'n':>5} {'began/s':>8} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}")
    for step, (began, taken) in steps.items():
        values = [end - start for start, end in zip(began, taken, strict=True)]
        rate = (len(began) - 1) / (max(began) - min(began))  # the load the step really had
        print(f"{step:<36} {len(values):5d} {rate:8.1f} {statistics.median(values) * 1000:8.0f} "
              f"{percentile(values, 0.95) * 1000:8.0f} {max(values) * 1000:8.0f}")
    calls = [create_calls[n] for n in created_names]
    print(f"{'(the create call, before the step)':<36} {len(calls):5d} {'':>8} {statistics.median(calls) * 1000:8.0f} "
          f"{percentile(calls, 0.95) * 1000:8.0f} {max(calls) * 1000:8.0f}")


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of process PID so far."""
    after_name = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(after_name[11]) + int(after_name[12])) / os.sysconf("SC_CLK_TCK")


def host_busy_seconds() -> float:
    """CPU time all cores spent on anything but idling or waiting for I/O so far."""
    ticks = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:9]]
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def cores_busy(start: float, end: float, pids: dict[str, int]) -> tuple[float, dict[str, float]]:
    """Cores kept busy from START to END (time.monotonic()): on the whole host, and by each process
    of PIDS (by name). Returns at END."""
    time.sleep(max(0.0, start - time.monotonic()))  # pacing, not waiting for a condition
    host, each = host_busy_seconds(), {name: cpu_seconds(pid) for name, pid in pids.items()}
    time.sleep(max(0.0, end - time.monotonic()))
    return ((host_busy_seconds() - host) / (end - start),
            {name: (cpu_seconds(pid) - each[name]) / (end - start) for name, pid in pids.items()})


def operator_requests(events: list[dict], user: str, namespace: str) -> Counter[str]:
    """USER's requests about the objects of NAMESPACE, as "verb resource[/subresource]"."""
    counts: Counter[str] = Counter()
    for event in events:
        ref = event.get("objectRef") or {}
        if event["user"]["username"] == user and ref.get("namespace") == namespace:
            subresource = f"/{ref['subresource']}" if ref.get("subresource") else ""
            counts[f"{event['verb']} {ref.get('resource')}{subresource}"] += 1
    return counts


def children_made(events: list[dict], user: str, namespace: str, resource: str) -> Counter[str]:
    """How many times USER created each object of RESOURCE in NAMESPACE (creates the API server refused not counted)."""
    return Counter(event["objectRef"]["name"] for event in events
                   if event["user"]["username"] == user and event["verb"] == "create"
                   and (event.get("objectRef") or {}).get("namespace") == namespace
                   and event["objectRef"].get("resource") == resource and event["responseStatus"]["code"] == 201)


def over_budget(per_experiment: dict[str, float]) -> list[str]:
    return [f"{key}: {per_experiment.get(key, 0):.2f} per Experiment, budget {REQUEST_BUDGET.get(key, 0)}"
            for key in sorted(set(REQUEST_BUDGET) | set(per_experiment))
            if per_experiment.get(key, 0) > REQUEST_BUDGET.get(key, 0) + 0.5]


def peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM")


def main() -> int:
    race_json = successful_race_json()
    log = "\n".join(encode_report(RaceReport(succeeded=True, results=summarize(race_json), race_json=race_json)))
    crds = [eck_crd_path(), *sorted((ROOT / "crds").glob("*.yaml"))]
    # The Job controller must finish Jobs at the fixed rate: it gets the API rate that takes.
    helm = Helm(helm_binary_path(), ROOT / "charts" / "esbench", Path(tempfile.mkdtemp()))
    with (ControlPlane(crd_paths=crds, controller_api_qps=100, audit=True) as control_plane,
          StandinKubelet(control_plane) as kubelet,
          operator_access(helm, control_plane, control_plane.create_namespace("esbench-system-")) as operator_kubeconfig):
        api_client = control_plane.api_client()
        custom = client.CustomObjectsApi(api_client)
        core = client.CoreV1Api(api_client)
        eck = StandinEck(api_client)
        # The name the operator's ServiceAccount token authenticates as (operator_access names the kubeconfig's user so).
        operator_user = yaml.safe_load(operator_kubeconfig.read_text())["users"][0]["name"]
        batch_namespace = control_plane.create_namespace("bench-batches-")
        namespace = control_plane.create_namespace("bench-")
        observer = Observer(api_client, namespace)
        batch_observer = Observer(api_client, batch_namespace)
        operator = OperatorProcess(operator_kubeconfig, Path(tempfile.mkdtemp()) / "operator.log",
                                   ESBENCH_RESYNC_SECONDS="10").start()
        pool = ThreadPoolExecutor(max_workers=16)
        try:
            created, create_calls, ready = {}, {}, {}
            failed = 0  # of all the Experiments, whose Jobs all succeed

            def create(name: str, namespace: str = namespace) -> None:
                began = time.monotonic()
                custom.create_namespaced_custom_object(models.GROUP, models.VERSION, namespace, models.PLURAL,
                                                       experiment(name))
                # Created once the API server has answered, as each other step begins after a write.
                created[name] = time.monotonic()
                create_calls[name] = created[name] - began

            # ECK provisions a cluster (its Service, Secrets and first status) as soon as it is
            # created, and the cluster turns Ready minutes later. Done back to back, the
            # operator's reconcile of the first status would still be running when the second
            # came, and "ready -> Job" would measure that queue rather than the step.
            def provision(name: str, namespace: str = namespace) -> None:
                eck.provision(namespace, name)

            def become_ready(name: str, namespace: str = namespace) -> None:
                eck.become_ready(namespace, name)
                ready[name] = time.monotonic()

            def finish(name: str, namespace: str = namespace) -> None:
                kubelet.finish_job_pod(namespace, f"{name}-rally", log, 0)

            names = [f"lat-{i:03d}" for i in range(LATENCY_EXPERIMENTS)]
            for start in range(0, len(names), BATCH):
                batch = names[start:start + BATCH]
                for name in batch:
                    create(name, batch_namespace)
                batch_observer.wait("es", batch)
                list(pool.map(partial(provision, namespace=batch_namespace), batch))
                for name in batch:
                    become_ready(name, batch_namespace)
                batch_observer.wait("job", batch)
                list(pool.map(partial(finish, namespace=batch_namespace), batch))
                failed += batch_observer.failed(batch)
            batch_observer.stop.set()
            print(f"Operator overhead over {len(names)} Experiments in batches of {BATCH} "
                  f"(real kube-apiserver {control_plane.server}):")
            print_steps(batch_observer, created, create_calls, ready, names, names, names)

            # CONCURRENT_EXPERIMENTS brought in at the fixed rate, then the probes created among them
            # (their step is "created -> ES" with all the others in flight), then every step of all.
            concurrent = [f"conc-{i:04d}" for i in range(CONCURRENT_EXPERIMENTS)]
            probes = [f"probe-{i:03d}" for i in range(PROBE_EXPERIMENTS)]
            in_flight = concurrent + probes
            started = time.monotonic()
            at_fixed_rate(pool, concurrent, ARRIVAL_RATE, create)
            observer.wait("es", concurrent, timeout=900)
            at_fixed_rate(pool, probes, ARRIVAL_RATE, create)
            observer.wait("es", probes, timeout=900)
            at_fixed_rate(pool, in_flight, ARRIVAL_RATE, provision)
            at_fixed_rate(pool, in_flight, ARRIVAL_RATE, become_ready)
            observer.wait("job", in_flight, timeout=900)
            at_fixed_rate(pool, in_flight, ARRIVAL_RATE, finish)
            failed += observer.failed(in_flight, timeout=900)
            print(f"{CONCURRENT_EXPERIMENTS} Experiments in flight, one step at a time at {ARRIVAL_RATE:g}/s (a stress "
                  f"beyond the steady state below, without a target; {len(probes)} more created among them, then all "
                  f"{len(in_flight)} made ready, then their Jobs finished): "
                  f"all terminal in {time.monotonic() - started:.1f}s, {failed} Failed so far")
            print_steps(observer, created, create_calls, ready, probes, in_flight, in_flight)

            # The same number at once: how fast the operator drains a burst (a throughput, not a latency).
            burst = [f"burst-{i:04d}" for i in range(CONCURRENT_EXPERIMENTS)]
            started = time.monotonic()
            list(pool.map(create, burst))
            observer.wait("es", burst, timeout=900)
            drained = time.monotonic() - started
            list(pool.map(provision, burst))
            list(pool.map(become_ready, burst))
            observer.wait("job", burst, timeout=900)
            list(pool.map(finish, burst))
            failed += observer.failed(burst, timeout=900)
            rss = peak_rss_mib(operator.process.pid)
            print(f"{CONCURRENT_EXPERIMENTS} Experiments created at once: a cluster asked for each within "
                  f"{drained:.1f}s ({CONCURRENT_EXPERIMENTS / drained:.0f}/s), all terminal "
                  f"{time.monotonic() - started:.1f}s after the first create, {failed} Failed so far; "
                  f"operator peak RSS {rss:.0f} MiB")

            # The stresses' aftermath first, all of it: their namespace is deleted with everything
            # in it (2,150 finished Experiments, their race ConfigMaps, Jobs, pods, Events, and the
            # deleted clusters' Services and Secrets the garbage collector is still removing). The
            # steady state is about 1,000 in flight; thousands of finished Experiments left over
            # from other loads would make the API server carry them (watch cache, etcd, a larger
            # heap for its Go GC to mark) all through it. A cluster that keeps finished
            # Experiments bounds them with ttlSecondsAfterFinished.
            observer.stop.set()
            started = time.monotonic()
            control_plane.delete_namespace(namespace)
            wait_for(lambda: namespace not in [n.metadata.name for n in core.list_namespace().items], 900,
                     what=f"namespace {namespace} and everything in it to be deleted")
            print(f"The stresses' namespace and all it held deleted in {time.monotonic() - started:.1f}s")

            # Steady state, in a namespace of its own: arrivals at CONCURRENT_EXPERIMENTS /
            # LIFETIME_SECONDS, each Experiment's cluster provisioned PROVISIONED_AFTER_SECONDS and
            # made ready half its lifetime after its create, and its race finished at the end of it,
            # so that all the steps run at once, at that rate, with CONCURRENT_EXPERIMENTS in
            # flight. Only the steps that began while that held count.
            live_namespace = control_plane.create_namespace("bench-live-")
            live_observer = Observer(api_client, live_namespace)
            rate = CONCURRENT_EXPERIMENTS / LIFETIME_SECONDS
            live = [f"live-{i:04d}" for i in range(CONCURRENT_EXPERIMENTS + STEADY_MEASURED)]
            started = time.monotonic() + 1
            # The steps measured below all begin in this window: what kept the cores busy in it.
            window = (started + CONCURRENT_EXPERIMENTS / rate, started + (CONCURRENT_EXPERIMENTS + STEADY_MEASURED) / rate)
            pids = {**control_plane.pids(), "operator": operator.process.pid, "this bench and its stand-ins": os.getpid()}
            with ThreadPoolExecutor(max_workers=5) as streams:
                cpu = streams.submit(cores_busy, *window, pids)
                for stream in [streams.submit(at_fixed_rate, pool, live, rate, partial(action, namespace=live_namespace),
                                              started + offset)
                               for action, offset in ((create, 0), (provision, PROVISIONED_AFTER_SECONDS),
                                                      (become_ready, LIFETIME_SECONDS / 2), (finish, LIFETIME_SECONDS))]:
                    stream.result()
                host_cores, process_cores = cpu.result()
            failed += live_observer.failed(live, timeout=900)
            live_observer.stop.set()
            steady_cpu_ratio = process_cores["operator"] / process_cores["kube-apiserver"]
            half = CONCURRENT_EXPERIMENTS // 2
            print(f"Steady state: {CONCURRENT_EXPERIMENTS} Experiments in flight, each living {LIFETIME_SECONDS:g}s "
                  f"(arrivals, provisions, readies and finishes each at {rate:.1f}/s at once), {STEADY_MEASURED} of each step "
                  f"measured; {failed} Failed so far")
            print_steps(
                live_observer, created, create_calls, ready, live[CONCURRENT_EXPERIMENTS:], live[half:half + STEADY_MEASURED],
                live[:STEADY_MEASURED])
            # Every step of an Experiment ran once per 1 / rate seconds: CPU per Experiment is cores / rate.
            print(f"Cores busy while those steps began ({window[1] - window[0]:.0f}s): {host_cores:.2f} of "
                  f"{os.cpu_count()} on the host; " + ", ".join(f"{name} {cores:.2f}" for name, cores in process_cores.items())
                  + f". CPU per Experiment: kube-apiserver {process_cores['kube-apiserver'] / rate * 1000:.0f} ms, "
                  f"operator {process_cores['operator'] / rate * 1000:.0f} ms (a ratio of {steady_cpu_ratio:.2f})")

            sweep_namespace = control_plane.create_namespace("bench-sweep-")
            sweep_observer = Observer(api_client, sweep_namespace)
            stop_jobs = threading.Event()
            eck.serve(sweep_namespace)
            threading.Thread(target=finish_every_job, daemon=True, args=(
                kubelet, client.BatchV1Api(api_client), sweep_namespace, log, stop_jobs)).start()
            started = time.monotonic()
            custom.create_namespaced_custom_object(models.GROUP, models.VERSION, sweep_namespace, models.SWEEP_PLURAL,
                                                   sweep("scale"))
            runs = [f"scale-c{c}-r{r}" for r in range(1, SWEEP_REPETITIONS + 1) for c in range(SWEEP_CELLS)]
            sweep_observer.wait("Succeeded", runs, timeout=600)
            done = wait_for(lambda: (s := custom.get_namespaced_custom_object(
                models.GROUP, models.VERSION, sweep_namespace, models.SWEEP_PLURAL, "scale")).get("status", {}).get(
                "phase") == "Succeeded" and s, 120, what="the sweep to finish")
            sweep_elapsed = time.monotonic() - started
            stop_jobs.set()
            eck.stop()
            sweep_observer.stop.set()
            handoffs = [sweep_observer.seen[("job", following)] - sweep_observer.seen[("Succeeded", previous)]
                        for previous, following in pairwise(runs)]
            status_bytes = len(json.dumps(done["status"]))
            clusters = len(done["status"]["clusters"])
            print(f"Sweep of {SWEEP_CELLS} cells x {SWEEP_REPETITIONS} repetitions ({len(runs)} runs, {clusters} "
                  f"shared cluster): all Succeeded in {sweep_elapsed:.1f}s; status {status_bytes / 1024:.0f} KiB "
                  f"({len(done['status']['comparison'])} comparison rows)")
            print(f"{'run Succeeded -> next run Job created':<36} {statistics.median(handoffs) * 1000:8.0f} "
                  f"{percentile(handoffs, 0.95) * 1000:8.0f} {max(handoffs) * 1000:8.0f}   (p50 / p95 / max ms)")
            rss = peak_rss_mib(operator.process.pid)
            print(f"operator peak RSS after the sweep: {rss:.0f} MiB")

            # What the API server recorded of the operator's requests, by load: per Experiment, and
            # how many clusters and Jobs it made for each (one each, or one cluster for a sweep).
            events = control_plane.audit_events()
            per_experiment = {key: count / len(names)
                              for key, count in operator_requests(events, operator_user, batch_namespace).items()}
            print(f"The operator's requests per Experiment in batches (n={len(names)}), from the API server's audit log: "
                  + ", ".join(f"{key} {count:.2f}" for key, count in sorted(per_experiment.items()))
                  + f"; {sum(per_experiment.values()):.2f} in all")
            steady = operator_requests(events, operator_user, live_namespace)
            print(f"... and in the steady state (n={len(live)}): {sum(steady.values()) / len(live):.2f} in all")
            expected_children = {
                batch_namespace: {"elasticsearches": len(names), "jobs": len(names)},
                live_namespace: {"elasticsearches": len(live), "jobs": len(live)},
                sweep_namespace: {"elasticsearches": 1, "experiments": len(runs), "jobs": len(runs)},
            }
            twice = {}  # (load namespace, resource) -> (objects made, objects expected, most creates of one)
            for load_namespace, expected in expected_children.items():
                for resource, count in expected.items():
                    made = children_made(events, operator_user, load_namespace, resource)
                    if len(made) != count or set(made.values()) != {1}:
                        twice[(load_namespace, resource)] = (len(made), count, max(made.values(), default=0))
            print(f"Every child made once (clusters, Jobs, a sweep's runs): {'yes' if not twice else twice}")
        finally:
            observer.stop.set()
            operator.stop()
            pool.shutdown(wait=False, cancel_futures=True)
    exceeded = over_budget(per_experiment)
    ok = (not exceeded and not twice and failed == 0 and steady_cpu_ratio < CPU_RATIO_BUDGET and rss < TARGET_RSS_MIB
          and clusters == 1 and status_bytes < TARGET_STATUS_BYTES)
    print(f"targets (the request budget per Experiment{': ' + '; '.join(exceeded) if exceeded else ''}, every child "
          f"made once, none Failed, operator/API server CPU < {CPU_RATIO_BUDGET}, RSS < {TARGET_RSS_MIB} MiB, one shared "
          f"cluster, sweep status < {TARGET_STATUS_BYTES // 1024} KiB): {'met' if ok else 'NOT met'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
