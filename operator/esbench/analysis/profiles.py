"""Profiles as collapsed stacks (async-profiler's `collapsed` output: one line per distinct stack,
its frames root first joined by `;`, then its sample count): the frames a task spent its samples
in, and how two profiles differ.

Pure: text in, figures out. Shares are of each profile's own samples, so that profiles of windows
of different lengths (or of runs at different rates) compare.
"""

from __future__ import annotations

import collections
import re
from dataclasses import dataclass

from esbench.api import models

# The converter marks each frame's kind after its name (_[j] JIT-compiled, _[i] inlined, _[0]
# interpreted, _[1] C1-compiled, _[k] kernel): the same method, whatever its kind.
_KIND = re.compile(r"_\[[a-z0-9]\]$")
# A native library without symbols is named by its path, which holds the node's own folder (a
# new temporary one each run): the library's file name stays the same from run to run.
_LIBRARY_PATH = re.compile(r"^/.*/([^/]+\.so(\.[0-9.]+)?)$")


def frame_name(frame: str) -> str:
    return _LIBRARY_PATH.sub(r"\1", _KIND.sub("", frame))


@dataclass(frozen=True)
class Stacks:
    counts: dict[tuple[str, ...], int]  # stack (root first) -> samples

    @property
    def samples(self) -> int:
        return sum(self.counts.values())

    def self_samples(self) -> collections.Counter[str]:
        """Samples per frame taken while that frame was running (the top of the stack)."""
        top: collections.Counter[str] = collections.Counter()
        for stack, count in self.counts.items():
            top[stack[-1]] += count
        return top

    def inclusive(self, pattern: str) -> int:
        """The samples with a frame matching the regex anywhere on the stack, each counted once."""
        matches = re.compile(pattern)
        return sum(count for stack, count in self.counts.items() if any(matches.search(f) for f in stack))

    def share(self, pattern: str) -> float:
        """The fraction of samples that `inclusive` counts."""
        return self.inclusive(pattern) / self.samples if self.samples else 0.0


def parse(text: str) -> Stacks:
    counts: collections.Counter[tuple[str, ...]] = collections.Counter()
    for line in text.splitlines():
        stack, _, count = line.rstrip().rpartition(" ")
        if stack and count.isdigit():
            counts[tuple(frame_name(f) for f in stack.split(";"))] += int(count)
    return Stacks(dict(counts))


def top_frames(stacks: Stacks, limit: int = 10) -> list[models.Frame]:
    total = stacks.samples
    return [models.Frame(frame=frame, percent=round(100 * count / total, 2))
            for frame, count in stacks.self_samples().most_common(limit)] if total else []


@dataclass(frozen=True)
class FrameChange:
    frame: str
    baseline_percent: float  # of the baseline's samples, self
    percent: float
    change: float  # percentage points


def changes(baseline: Stacks, current: Stacks, limit: int = 15) -> list[FrameChange]:
    """The frames whose self share moved most between the two profiles, largest move first."""
    if not baseline.samples or not current.samples:
        return []
    before, after = baseline.self_samples(), current.self_samples()
    rows = [FrameChange(frame, 100 * before[frame] / baseline.samples, 100 * after[frame] / current.samples,
                        100 * (after[frame] / current.samples - before[frame] / baseline.samples))
            for frame in set(before) | set(after)]
    return sorted(rows, key=lambda row: (-abs(row.change), row.frame))[:limit]


def most_sampled(stacks: Stacks, limit: int) -> Stacks:
    """The `limit` stacks with the most samples: what a bounded file keeps."""
    kept = sorted(stacks.counts.items(), key=lambda item: -item[1])[:limit]
    return Stacks(dict(kept))


def to_text(stacks: Stacks, samples: int | None = None) -> str:
    """The stacks in collapsed form; with `samples`, their counts scaled to that total (async-profiler's
    differential flame graph subtracts counts, which compare only between profiles of equal totals)."""
    factor = samples / stacks.samples if samples is not None and stacks.samples else 1.0
    lines = ((";".join(stack), round(count * factor)) for stack, count in stacks.counts.items())
    return "".join(f"{stack} {count}\n" for stack, count in lines if count)
