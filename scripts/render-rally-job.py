#!/usr/bin/env python3
"""Prints, as YAML, the Rally Job the operator would create for an Experiment file.

Built by the operator's own pure builder (esbench.planning.manifests) with the operator's
default settings, against the ECK cluster the Experiment asks for, so that static checks
(scripts/checkov.sh) see exactly what reaches the API server. No cluster is needed.
Usage: scripts/render-rally-job.py [EXPERIMENT.yaml]   (default: examples/quickstart.yaml)
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

from esbench.controller.config import Settings
from esbench.planning import manifests

ROOT = Path(__file__).resolve().parents[1]


def rally_job(experiment_file: Path) -> dict:
    body = yaml.safe_load(experiment_file.read_text())
    # What the API server adds on creation; the builder names the Job's owner by them.
    body["metadata"].setdefault("namespace", "default")
    body["metadata"].setdefault("uid", "00000000-0000-0000-0000-000000000000")
    experiment = manifests.Experiment.from_body(body)
    cluster = manifests.elasticsearch_manifest(experiment) if experiment.owns_cluster else None
    settings = Settings.from_env({})
    return manifests.rally_job_manifest(experiment, manifests.connection(experiment, cluster),
                                        settings.rally_image, settings.rally_image_pull_policy,
                                        settings.job_deadline_grace_seconds)


if __name__ == "__main__":
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "examples" / "quickstart.yaml"
    yaml.safe_dump(rally_job(path), sys.stdout, sort_keys=False)
