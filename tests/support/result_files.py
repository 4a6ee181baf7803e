"""Experiment result files made from the real race.json fixtures in tests/fixtures/race/.

Nothing is invented: the results are esbench.results.summarize(race.json), the spec is what
Rally's recorded track params say was asked for (shards, replicas, index settings, other
params), the version is the one Rally saw, and the document is built by the same function
that writes `esbench run --output`, after the same admission check.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from esbench.api import models, validation
from esbench.cli import local
from esbench.runner import environment, race, results, taskwindows

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "race"


def race_fixtures() -> list[Path]:
    """Every race.json fixture that has results (a failed race has none)."""
    return [p for p in sorted(FIXTURES.glob("*.json")) if json.loads(p.read_text()).get("results")]


def _name(path: Path) -> str:
    # Fixture files start with the version (8.7.1-...): Experiment names must start with a letter.
    name = "es-" + re.sub(r"[^a-z0-9-]+", "-", path.stem.lower()).strip("-")
    return name[:36].rstrip("-")


def spec_from_race(race: dict[str, Any]) -> dict[str, Any]:
    params = dict(race.get("track-params") or {})
    params.pop("cluster_health", None)  # the runner adds it for single-node clusters
    index: dict[str, Any] = {}
    settings = dict(params.pop("index_settings", None) or {})
    if "index.codec" in settings:
        index["codec"] = settings.pop("index.codec")
    if "index.refresh_interval" in settings:
        index["refreshInterval"] = settings.pop("index.refresh_interval")
    if settings:
        index["settings"] = settings
    if "number_of_shards" in params:
        index["shards"] = params.pop("number_of_shards")
    if "number_of_replicas" in params:
        index["replicas"] = params.pop("number_of_replicas")
    workload: dict[str, Any] = {"track": race["track"]}
    if race["track"] not in models.BUNDLED_TRACKS:
        workload["source"] = "RallyTracks"
    if race.get("challenge"):
        workload["challenge"] = race["challenge"]
    if params:
        workload["trackParams"] = params
    return {
        "elasticsearch": {"version": race["cluster"]["distribution-version"]},
        "index": index,
        "workload": workload,
    }


def experiment_from_race(path: Path) -> dict[str, Any]:
    race = json.loads(path.read_text())
    stored = validation.admit({
        "apiVersion": models.API_VERSION, "kind": models.KIND, "metadata": {"name": _name(path)},
        "spec": spec_from_race(race),
    })
    summary = results.summarize(race)
    errors = results.max_error_rate(summary) > 0
    moment = datetime.strptime(race["race-timestamp"], "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
    reason, message = ("RaceErrors", "requests failed") if errors else local.RACE_SUCCEEDED
    return local.experiment_document(
        stored, succeeded=not errors, reason=reason, message=message, race_id=race["race-id"],
        start_time=moment, completion_time=moment, results=summary,
        cluster_version=summary.distribution_version,
    )


FIXED_RATE = FIXTURES / "8.7.1-range-queries-fixed-rate"


def fixed_rate_experiment(workload: dict[str, Any] | None = None) -> dict[str, Any]:
    """The Experiment document of the fixed-rate fixture race, with what the runner adds to
    Rally's figures from the same files: task windows and resources, the environment record."""
    race_json = json.loads((FIXED_RATE / "race.json").read_text())
    spec = spec_from_race(race_json)
    spec["workload"].update(workload or {})
    stored = validation.admit({"apiVersion": models.API_VERSION, "kind": models.KIND,
                               "metadata": {"name": "fixed-rate"}, "spec": spec})
    summary = results.summarize(race_json)
    info = json.loads((FIXED_RATE / "nodes-info.json").read_text())
    race.attribute_to_tasks(summary, taskwindows.parse((FIXED_RATE / "rally.log").read_text()),
                            json.loads((FIXED_RATE / "node-stats.json").read_text()), environment.processors(info))
    summary.environment = models.Environment(
        rally_version=summary.rally_version, elasticsearch_version=summary.distribution_version,
        track=environment.track_identity(models.Workload(track="range-queries"), race.TRACKS_DIR, FIXED_RATE),
        nodes=environment.nodes(info, {}))
    moment = datetime.strptime(race_json["race-timestamp"], "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
    return local.experiment_document(
        stored, succeeded=True, reason=local.RACE_SUCCEEDED[0], message=local.RACE_SUCCEEDED[1],
        race_id=race_json["race-id"], start_time=moment, completion_time=moment, results=summary,
        cluster_version=summary.distribution_version)


def write_result_files(folder: Path) -> list[Path]:
    """One Experiment JSON file per race.json fixture with results, in folder."""
    written = []
    for path in race_fixtures():
        target = folder / f"{_name(path)}.json"
        target.write_text(json.dumps(experiment_from_race(path), indent=2))
        written.append(target)
    return written
