"""The esbench command line. `esbench race` is the Rally Job's entrypoint."""

from __future__ import annotations

import os
import shutil
import sys
import uuid
from pathlib import Path
from typing import Any

import click
import pydantic
import yaml

from esbench.analysis import asyncprofiler
from esbench.api import models
from esbench.api.reasons import Reason
from esbench.cli import commands, credentials, history
from esbench.runner import podprofiles, race, sidecars


def load_spec(text: str) -> models.ExperimentSpec:
    """An Experiment spec from JSON or YAML: the spec itself or a whole Experiment manifest."""
    document: Any = yaml.safe_load(text)  # YAML is a superset of JSON
    if isinstance(document, dict) and document.get("kind") == models.KIND and "spec" in document:
        document = document["spec"]
    return models.ExperimentSpec.model_validate(document)


@click.group()
def main() -> None:
    """Declarative, reproducible Elasticsearch benchmarks (ECK + Rally)."""


@main.command("race")
@click.option("--spec-file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Experiment spec (JSON or YAML); default: the ESBENCH_SPEC environment variable.")
@click.option("--target-url", required=True, help="Elasticsearch URL, e.g. https://NAME-es-http.NS.svc:9200.")
@click.option("--ca-file", type=click.Path(dir_okay=False), default=None, help="CA certificate to verify the target with.")
@click.option("--race-id", default=None, help="Rally race id (default: a new UUID).")
@click.option("--work-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("/tmp/esbench"),
              show_default=True, help="Writable directory for Rally's home, the prepared track and the corpus.")
@click.option("--target-timeout", type=float, default=300.0, show_default=True,
              help="Seconds to wait for the target to answer before reporting TargetUnreachable.")
@click.option("--unassigned-timeout", type=float, default=race.allocation.STUCK_SECONDS, show_default=True,
              help="Seconds a shard the race needs may stay unassigned, Elasticsearch refusing to allocate it, "
                   "before the race is stopped (ShardsUnassigned).")
@click.option("--snapshot-repository", default=None, metavar="LOCATION",
              help="For workload.reuseIndex: a folder in the path.repo of the target's nodes, where they keep "
                   "the snapshots of built indices.")
@click.option("--node-sidecar", "node_sidecars", multiple=True, metavar="URL",
              help="Each node's esbench sidecar (Kubernetes; repeatable): what the node does not report itself, "
                   "beside each _nodes/stats sample, and with spec.profile its recordings (the report then "
                   "carries the per-task stacks).")
def race_command(spec_file: Path | None, target_url: str, ca_file: str | None, race_id: str | None,
         work_dir: Path, target_timeout: float, unassigned_timeout: float, snapshot_repository: str | None,
         node_sidecars: tuple[str, ...]) -> None:
    """Run one Rally race against TARGET and print the race report lines.

    Credentials come from ES_USERNAME and ES_PASSWORD, or ES_PASSWORD_FILE naming a file that
    holds the password (what the Rally Job sets), never from options, so that they stay off
    command lines; esrally from ESBENCH_ESRALLY (default: esrally on PATH).
    Exit status: 0 success, 10 InvalidSpec, 11 TargetUnreachable, 12 TrackError,
    13 RaceFailed, 14 RaceErrors, 16 RaceTimeout, 17 ShardsUnassigned.
    """
    username, password = credentials.from_env()
    text = spec_file.read_text() if spec_file else os.environ.get("ESBENCH_SPEC")
    try:
        if not text:
            raise ValueError("no spec: pass --spec-file or set ESBENCH_SPEC")
        spec = load_spec(text)
    except (ValueError, yaml.YAMLError, pydantic.ValidationError) as e:
        report = race.failed(Reason.INVALID_SPEC, str(e))
    else:
        settings = race.RaceSettings(
            spec=spec,
            target_url=target_url,
            race_id=race_id or str(uuid.uuid4()),
            work_dir=work_dir,
            ca_file=ca_file,
            username=username,
            password=password,
            esrally=os.environ.get("ESBENCH_ESRALLY", "esrally"),
            target_timeout=target_timeout,
            unassigned_timeout=unassigned_timeout,
            snapshot_repository=snapshot_repository,
        )
        if node_sidecars:
            settings.node_probe = sidecars.probe(list(node_sidecars), password, ca_file, settings.sample_interval)
        if spec.profile and node_sidecars:
            # The esbench image carries the converter there (ESBENCH_ASYNC_PROFILER) and a JRE to run it.
            home = Path(os.environ.get("ESBENCH_ASYNC_PROFILER", "/opt/async-profiler"))
            settings.profiler = podprofiles.PodProfiles(
                spec.profile, list(node_sidecars), work_dir / "recordings", Path(shutil.which("java") or "java"),
                home / asyncprofiler.CONVERTER, password=password, ca_file=ca_file)
        report = race.run(settings)
        if settings.profiler:
            race.attach_profiles(report, work_dir / race.PROFILES)
    race.print_report(report)
    sys.exit(race.exit_code(report))


@main.command()
@click.option("--namespace", "namespaces", multiple=True,
              help="Watch only this namespace (repeatable). Default: all namespaces.")
@click.option("--liveness", default="http://0.0.0.0:8080/healthz", show_default=True,
              help="kopf's liveness endpoint, for the pod's liveness probe.")
@click.option("--metrics-port", type=click.IntRange(0, 65535), default=8081, show_default=True,
              help="Serve Prometheus metrics (GET /metrics) on this port; 0: none.")
@click.option("--verbose", is_flag=True, help="Log every handler call.")
def operator(namespaces: tuple[str, ...], liveness: str, metrics_port: int, verbose: bool) -> None:
    """Run the esbench operator (kopf) in the foreground."""
    import kopf
    import prometheus_client

    import esbench.controller.handlers  # noqa: F401  (registers the handlers)

    if metrics_port:
        prometheus_client.start_http_server(metrics_port)
    kopf.configure(verbose=verbose, log_prefix=True)  # each object's lines name it, as `kopf run` does
    kopf.run(standalone=True, clusterwide=not namespaces, namespaces=list(namespaces), liveness_endpoint=liveness)


for _command in (commands.run_command, commands.show_command, commands.compare_command, commands.report_command,
                 commands.sweep_command, commands.profile_command, history.history_command):
    main.add_command(_command)

