"""Elasticsearch and Rally on different CPUs of one machine, as two pods on different nodes.

Sharing every CPU, a busy load driver takes CPU time from the node it measures and the other
way round, so a figure follows the other side's load. Affinity is per thread on Linux and is
inherited by threads and processes started afterwards: the CLI moves itself (and so esrally and
its own sampling) to Rally's CPUs first, and starts each node from a thread moved to the node's.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class CpuSplit:
    rally: tuple[int, ...]
    elasticsearch: tuple[int, ...]

    def describe(self) -> str:
        return (f"Elasticsearch on CPU {_listed(self.elasticsearch)}, "
                f"Rally and esbench on CPU {_listed(self.rally)}")


def _listed(cpus: tuple[int, ...]) -> str:
    return ", ".join(str(cpu) for cpu in cpus)


def split(available: set[int]) -> CpuSplit | None:
    """Rally gets the first quarter of the CPUs (at least one), Elasticsearch the rest; None
    with fewer than two CPUs."""
    ordered = tuple(sorted(available))
    if len(ordered) < 2:
        return None
    rally = max(1, len(ordered) // 4)
    return CpuSplit(rally=ordered[:rally], elasticsearch=ordered[rally:])


@contextlib.contextmanager
def on_cpus(cpus: tuple[int, ...] | None) -> Iterator[None]:
    """The calling thread runs on cpus meanwhile (so do the processes it starts, for good)."""
    if not cpus:
        yield
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cpus)
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)
