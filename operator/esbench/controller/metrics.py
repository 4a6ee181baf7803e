"""The operator's metrics endpoint (`esbench operator --metrics-port`), for Prometheus: each
schedule's regressions, as `esbench history check --format prometheus` writes them for a local
history, so that one alert rule serves both (esbench_regression_state == 2)."""

from __future__ import annotations

from typing import Any

from prometheus_client import Gauge

from esbench.analysis.changepoints import REGRESSION_GAUGE, REGRESSION_GAUGE_VALUES

regression_state = Gauge(
    REGRESSION_GAUGE,
    "A schedule's series whose newest change point is a regression: 1 suspected (a confirming run is made), "
    "2 confirmed. A series without one is absent.",
    ["namespace", "schedule", "configuration", "task", "metric"])
# The label sets shown per schedule, to take away those of a regression that is gone.
_shown: dict[tuple[str, str], set[tuple[str, ...]]] = {}


def show(namespace: str, schedule: str, check: dict[str, Any] | None) -> None:
    """The gauges of a schedule's latest regression check (none when it has no check, or is deleted)."""
    shown = set()
    for regression in (check or {}).get("regressions") or []:
        labels = (namespace, schedule, regression["configuration"], regression["task"], regression["metric"])
        regression_state.labels(*labels).set(REGRESSION_GAUGE_VALUES[regression["state"].lower()])
        shown.add(labels)
    for gone in _shown.pop((namespace, schedule), set()) - shown:
        regression_state.remove(*gone)
    if shown:
        _shown[namespace, schedule] = shown
