"""Pure summaries for the Experiment's status: conditions, the headline, log excerpts."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

from esbench.api.models import Condition, Model, Results
from esbench.api.race_report import MARKER
from esbench.api.reasons import ConditionType, Reason

# A condition to set: (type, met, reason, message).
ConditionUpdate = tuple[ConditionType, bool, Reason, str]

# Anything credential-shaped is cut from text we copy out of a pod log.
_SECRET_PATTERNS = [
    (re.compile(r"(?i)\b(basic|bearer)\s+[A-Za-z0-9+/=._-]{8,}"), r"\1 [redacted]"),
    (re.compile(r"(?i)(password|passwd|secret|token|api[_-]?key|authorization)(\W{0,3}\s*[:=]\s*)\S+"), r"\1\2[redacted]"),
    (re.compile(r"(https?://)[^/\s:@]+:[^/\s@]+@"), r"\1[redacted]@"),
]


def now() -> str:
    """The current time as the API writes timestamps (seconds, UTC)."""
    return timestamp(datetime.now(UTC))


def parse(moment: str) -> datetime:
    """A timestamp as the API writes them."""
    return datetime.strptime(moment, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


def timestamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def past(since: str, seconds: float) -> bool:
    """Whether `seconds` have gone by since the timestamp `since`."""
    return seconds_left(since, seconds) <= 0


def seconds_left(since: str, seconds: float) -> float:
    """How long until `seconds` have gone by since the timestamp `since` (negative once they have)."""
    return (parse(since) + timedelta(seconds=seconds) - datetime.now(UTC)).total_seconds()


def waited(resource: dict[str, Any], seconds: float) -> bool:
    """Whether `seconds` have gone by since the resource was created."""
    return time_left(resource, seconds) <= 0


def time_left(resource: dict[str, Any], seconds: float) -> float:
    """How long until `seconds` have gone by since the resource was created: waits count from
    there, so that time the operator was down (or busy elsewhere) counts too."""
    return seconds_left(resource["metadata"]["creationTimestamp"], seconds)


def checked(model: type[Model], patch: dict[str, Any]) -> dict[str, Any]:
    """The status patch, once its kind's status model accepts it: the API server would silently
    prune a field the CRD (made from that model) does not have, and the write would look fine.
    None values (merge patch: remove the field) are not checked."""
    model.model_validate({key: value for key, value in patch.items() if value is not None})
    return patch


def with_condition(
    conditions: list[dict[str, Any]] | None,
    type_: ConditionType,
    status: bool,
    reason: Reason,
    message: str,
    now: str,
    generation: int | None,
) -> list[dict[str, Any]]:
    """The conditions list with one condition set; lastTransitionTime moves only when status changes."""
    value = "True" if status else "False"
    result = []
    previous = None
    for condition in conditions or []:
        if condition.get("type") == type_:
            previous = condition
        else:
            result.append(condition)
    transition = previous["lastTransitionTime"] if previous and previous.get("status") == value else now
    result.append(Condition(type=type_, status=value, reason=reason, message=message, last_transition_time=transition,
                            observed_generation=generation).to_wire())
    return sorted(result, key=lambda c: c["type"])


def patch_of(model: type[Model], body: dict[str, Any], fields: dict[str, Any],
             *conditions: ConditionUpdate) -> dict[str, Any] | None:
    """The status patch that sets FIELDS and CONDITIONS (type, met, reason, message) on BODY,
    checked against its kind's status model; None when it would change nothing (no write, so no
    event storm from the operator's own updates)."""
    current = body.get("status") or {}
    generation = body["metadata"].get("generation")
    merged = current.get("conditions")
    moment = now()
    for type_, ok, reason, message in conditions:
        merged = with_condition(merged, type_, ok, reason, message, moment, generation)
    patch = checked(model, {**fields, "observedGeneration": generation, "conditions": merged})
    return None if all(current.get(key) == value for key, value in patch.items()) else patch


def condition(status: dict[str, Any], type_: ConditionType) -> dict[str, Any] | None:
    """The condition of that type in a status, if set."""
    return next((c for c in status.get("conditions") or [] if c.get("type") == type_), None)


def recorded(body: dict[str, Any]) -> bool:
    """Whether the results store holds the object (its Recorded condition)."""
    found = condition(body.get("status") or {}, ConditionType.RECORDED)
    return found is not None and found["status"] == "True"


def headline(results: Results) -> str | None:
    """One figure for `kubectl get`: the first indexing throughput, else the first throughput."""
    with_throughput = [t for t in results.tasks if t.throughput and t.throughput.median is not None]
    if not with_throughput:
        return None
    indexing = [t for t in with_throughput if (t.throughput.unit or "").startswith("docs/")]
    task = (indexing or with_throughput)[0]
    return f"{task.throughput.median:,.0f} {task.throughput.unit} {task.task}"


def redact(text: str) -> str:
    for pattern, replacement in _SECRET_PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def log_excerpt(log: str, max_lines: int = 15, max_chars: int = 1500) -> str:
    """The redacted tail of a pod log, without esbench's report lines."""
    lines = [line for line in log.splitlines() if line.strip() and not line.startswith(MARKER)]
    tail = "\n".join(lines[-max_lines:])
    return redact(tail[-max_chars:])
