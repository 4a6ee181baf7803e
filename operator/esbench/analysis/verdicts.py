"""What repeated runs said: a sweep's own status.comparison, or groups of runs compared as a sweep
compares its cells. Apart from the report, so that `esbench compare` gives them without drawing."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from esbench.analysis import stats
from esbench.analysis.compare import Group
from esbench.api import models


@dataclass(frozen=True)
class Verdicts:
    """Repeated runs' comparison (stats.to_wire's rows) and how it was made."""

    rows: list[dict[str, Any]]
    corrections: dict[str, Any]
    statistics: models.Statistics
    within: list[str]  # spec fields each of whose values has a baseline of its own
    baselines: list[str]  # the groups the others were compared with
    sweep: str | None = None  # the sweep whose status.comparison these are

    @classmethod
    def of_sweep(cls, sweep: dict[str, Any]) -> Verdicts:
        """What a sweep said of its runs: its status, made with its spec's statistics."""
        spec, state = sweep.get("spec") or {}, sweep.get("status") or {}
        baselines = [c["id"] for c in state.get("cells") or [] if c.get("baseline")]
        return cls(rows=state.get("comparison") or [], corrections=state.get("corrections") or {},
                   statistics=models.Statistics.model_validate(spec.get("statistics") or {}),
                   within=list(spec.get("compareWithin") or []),
                   baselines=baselines or [b for b in [state.get("baseline")] if b], sweep=sweep["metadata"]["name"])

    @classmethod
    def of_groups(cls, groups: list[Group], primary: Iterable[tuple[str, str]], paired: bool,
                  within: Sequence[str]) -> Verdicts:
        """Each group against the first (of its level), as stats.compare_groups compares them."""
        rows = stats.compare_groups(groups, primary, paired, within)
        return cls(rows=stats.to_wire(rows), corrections=stats.corrections(rows),
                   statistics=models.Statistics(paired=paired), within=list(within),
                   baselines=list(dict.fromkeys(stats.group_baselines(groups, within).values())))
