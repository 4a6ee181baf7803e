"""Operator settings, read from the environment in one place (the Helm chart sets them)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from esbench.esclient import Client
from esbench.planning.manifests import SidecarImage


@dataclass(frozen=True)
class Settings:
    rally_image: str
    rally_image_pull_policy: str
    resync_seconds: float
    max_workers: int
    job_deadline_grace_seconds: int
    # The Rally container's resources when an Experiment sets no rally.resources (the chart's
    # operator.rallyResources); none outside the chart.
    rally_resources: dict[str, Any] | None = None
    # Where every succeeded Experiment is recorded (the chart's resultsStore); none: not recorded.
    results_store: Client | None = None

    @property
    def sidecar_image(self) -> SidecarImage:
        """The esbench image, which runs the Rally Job and the sidecar of the clusters esbench makes."""
        return SidecarImage(self.rally_image, self.rally_image_pull_policy)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        return cls(
            rally_image=env.get("ESBENCH_RALLY_IMAGE", "esbench/esbench:0.1.0"),
            rally_image_pull_policy=env.get("ESBENCH_RALLY_IMAGE_PULL_POLICY", "IfNotPresent"),
            # How often an unfinished Experiment is re-checked even without events (timeouts,
            # TTLs, retries, what the operator does not watch); lifecycle.unattended_seconds.
            resync_seconds=float(env.get("ESBENCH_RESYNC_SECONDS", "10")),
            max_workers=int(env.get("ESBENCH_MAX_WORKERS", "16")),
            # The Rally Job's deadline is raceTimeoutSeconds plus this: time to be scheduled and
            # to pull the image, since the runner counts raceTimeoutSeconds from its own start.
            job_deadline_grace_seconds=int(env.get("ESBENCH_JOB_DEADLINE_GRACE_SECONDS", "120")),
            rally_resources=json.loads(env.get("ESBENCH_RALLY_RESOURCES") or "null"),
            results_store=_results_store(env),
        )


def _results_store(env: Mapping[str, str]) -> Client | None:
    """The store's URL and user from the environment, its password and CA from the files the
    chart mounts from Secrets (never from an environment variable)."""
    url = env.get("ESBENCH_RESULTS_STORE_URL")
    if not url:
        return None
    password_file = env.get("ESBENCH_RESULTS_STORE_PASSWORD_FILE")
    return Client(url, username=env.get("ESBENCH_RESULTS_STORE_USERNAME") or None,
                  password=Path(password_file).read_text().strip() if password_file else None,
                  ca_file=env.get("ESBENCH_RESULTS_STORE_CA_FILE") or None)
