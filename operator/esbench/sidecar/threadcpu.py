"""Where a local node's CPU time went by kind of thread: JIT compilation, garbage collection.

Elasticsearch reports its process's CPU time only. The kernel keeps it per thread
(/proc/PID/task/TID/stat) under the thread's name, and HotSpot names its own threads: the JIT
compilers "C1 CompilerThreadN" and "C2 CompilerThreadN", the collectors "GC Thread#N" and
"G1 ..." (the kernel keeps the first 15 characters). Elasticsearch's own threads all begin
"elasticsearch[", cut before their pool's name, so they are only the rest.

HotSpot starts and ends compiler threads as its queue grows and drains: a thread that has ended
keeps the CPU time it had when last read, so a counter never goes down (what it spent after
that last read is lost: at most one sampling interval of one thread).
"""

from __future__ import annotations

import os
from pathlib import Path

PROC = Path("/proc")
JIT_THREADS = ("C1 CompilerThre", "C2 CompilerThre")
GC_THREADS = ("GC Thread#", "G1 ")


def kind(name: str) -> str | None:
    if name.startswith(JIT_THREADS):
        return "jit"
    if name.startswith(GC_THREADS):
        return "gc"
    return None


def _read(stat: str) -> tuple[str, str, int]:
    """A thread's name, start time and user + system CPU time (clock ticks) from its stat line. The
    name is in parentheses and may itself hold spaces and parentheses."""
    name = stat[stat.index("(") + 1:stat.rindex(")")]
    fields = stat[stat.rindex(")") + 2:].split()  # from the 3rd field: utime, stime the 14th, 15th; starttime the 22nd
    return name, fields[19], int(fields[11]) + int(fields[12])


class ThreadCpu:
    """Cumulative CPU time of one process's JIT compiler and GC threads, read on each call."""

    def __init__(self, pid: int, proc: Path = PROC):
        self._tasks = proc / str(pid) / "task"
        # (thread id, start time: ids are reused) -> (kind, ticks when last read)
        self._seen: dict[tuple[str, str], tuple[str, int]] = {}
        self._ms_per_tick = 1000 / os.sysconf("SC_CLK_TCK")

    def counters(self) -> dict[str, float]:
        for task in self._tasks.iterdir():
            try:
                name, started, ticks = _read((task / "stat").read_text())
            except FileNotFoundError:  # ended since the listing
                continue
            thread_kind = kind(name)
            if thread_kind:
                self._seen[task.name, started] = (thread_kind, ticks)
        totals = {"jit": 0, "gc": 0}
        for thread_kind, ticks in self._seen.values():
            totals[thread_kind] += ticks
        return {"jit_cpu_ms": totals["jit"] * self._ms_per_tick, "gc_cpu_ms": totals["gc"] * self._ms_per_tick}
