"""When each task of a race ran, from Rally's own log: the time windows that node figures
are attributed to.

race.json gives per-task latency and throughput but not when a task ran, and node CPU over a
whole race is dominated by whatever phase is longest (bulk indexing, usually). Rally's load
driver logs, per worker and per step of the schedule, `Worker[N] executing tasks: [...]` just
before its clients start and `Worker[N] finished executing tasks [...] in S seconds` once all
of them are done. A task's window runs from the first worker starting it to the last one
finishing it. Tasks of one `parallel` element share a step, so they share a window: node
figures cannot be split between tasks that ran at the same time. Warm-up requests are inside
the window (Rally does not log where warm-up ends).

Pure: the text of rally.log in, windows out. Rally's default logging.json writes timestamps in
UTC as `YYYY-mm-dd HH:MM:SS,<msecs>` with msecs not zero-padded.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from datetime import UTC, datetime

_LINE = re.compile(
    r"^(?P<time>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(?P<msecs>\d{1,3}) .*? esrally\.driver\.driver INFO "
    r"Worker\[\d+\] (?:executing tasks: (?P<started>\[.*\])|finished executing tasks (?P<finished>\[.*\]) in )"
)


@dataclass(frozen=True)
class TaskWindow:
    task: str
    start: float  # seconds since the epoch
    end: float

    @property
    def seconds(self) -> float:
        return self.end - self.start

    @staticmethod
    def rfc3339(at: float) -> str:
        return datetime.fromtimestamp(at, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _timestamp(match: re.Match[str]) -> float:
    at = datetime.strptime(match["time"], "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC)
    return at.timestamp() + int(match["msecs"]) / 1000


def parse(log: str) -> dict[str, TaskWindow]:
    """Task name -> window, for every task that both started and finished in this log."""
    starts: dict[str, float] = {}
    ends: dict[str, float] = {}
    for line in log.splitlines():
        match = _LINE.match(line)
        if not match:
            continue
        at = _timestamp(match)
        names = ast.literal_eval(match["started"] or match["finished"])
        for name in names:
            if match["started"]:
                starts[name] = min(at, starts.get(name, at))
            else:
                ends[name] = max(at, ends.get(name, at))
    return {
        name: TaskWindow(name, start, ends[name])
        for name, start in sorted(starts.items(), key=lambda item: item[1])
        if name in ends and ends[name] >= start
    }
