"""The race report: what the runner hands back to whoever started it.

The Rally pod has no Kubernetes API rights, so it prints its report to its log and the
operator reads the log of the finished pod. The report is gzip'd, base64'd and split into
short marked lines so that it survives log line splitting and is easy to find among Rally's
own output.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import json
import re
import zlib
from typing import Any

import pydantic

from esbench.api.models import Model, Results
from esbench.api.reasons import Reason

MARKER = "==esbench-report=="
_CHUNK = 3000
_LINE = re.compile(rf"^{re.escape(MARKER)} (\d+)/(\d+) (\S+)$")


class Failure(Model):
    kind: Reason  # one of reasons.RACE_FAILURES
    message: str


class RaceReport(Model):
    succeeded: bool
    failure: Failure | None = None
    results: Results | None = None
    race_json: dict[str, Any] | None = None
    # The per-task profile files (Results.profile), base64: the Rally Job's only way out for them.
    profiles: dict[str, str] | None = None


def encode_report(report: RaceReport) -> list[str]:
    payload = base64.b64encode(gzip.compress(json.dumps(report.to_wire()).encode())).decode()
    chunks = [payload[i : i + _CHUNK] for i in range(0, len(payload), _CHUNK)] or [""]
    return [f"{MARKER} {n}/{len(chunks)} {chunk}" for n, chunk in enumerate(chunks, start=1)]


class UnreadableReport(ValueError):
    """The log holds report lines, but no complete report this version can read (garbled,
    truncated, or written by a runner of another version)."""


def decode_report(log: str) -> RaceReport | None:
    """The last complete report in a log, or None when the log holds no report lines at all."""
    chunks: dict[int, str] = {}
    found: RaceReport | None = None
    marked = False
    for line in log.splitlines():
        match = _LINE.match(line.strip())
        if not match:
            continue
        marked = True
        index, total, chunk = int(match[1]), int(match[2]), match[3]
        if index == 1:
            chunks = {}
        chunks[index] = chunk
        if index == total and len(chunks) == total:
            payload = "".join(chunks[i] for i in range(1, total + 1))
            try:
                found = RaceReport.model_validate(json.loads(gzip.decompress(base64.b64decode(payload, validate=True))))
            except (binascii.Error, OSError, EOFError, zlib.error, ValueError, pydantic.ValidationError) as error:
                raise UnreadableReport(f"the race report in the log cannot be read: {error}") from error
    if marked and found is None:
        raise UnreadableReport("the log holds race report lines but no complete report (cut short?)")
    return found
