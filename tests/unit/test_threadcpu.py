"""The CPU time of a node's JIT compiler and GC threads (sidecar.threadcpu), on a /proc laid out
in a folder as the kernel lays it out (a real node's: tests/cli/test_run.py)."""

import os

import pytest

from esbench.sidecar import threadcpu

MS_PER_TICK = 1000 / os.sysconf("SC_CLK_TCK")


def thread(proc, tid: str, name: str, utime: int, stime: int, started: int = 100) -> None:
    folder = proc / "42" / "task" / tid
    folder.mkdir(parents=True, exist_ok=True)
    # pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime
    # cutime cstime priority nice num_threads itrealvalue starttime ...
    (folder / "stat").write_text(f"{tid} ({name}) S 1 1 1 0 -1 0 0 0 0 0 {utime} {stime} 0 0 20 0 90 0 {started} 0 0\n")


@pytest.mark.parametrize(("name", "kind"), [
    ("C2 CompilerThre", "jit"), ("C1 CompilerThre", "jit"), ("GC Thread#0", "gc"), ("G1 Conc#0", "gc"),
    ("G1 Refine#0", "gc"), ("elasticsearch[", None), ("VM Thread", None), ("java", None),
])
def test_hotspots_thread_names_tell_jit_and_gc_threads_from_the_rest(name, kind):
    assert threadcpu.kind(name) == kind


def test_jit_and_gc_threads_cpu_is_summed_and_an_ended_thread_keeps_what_it_had(tmp_path):
    thread(tmp_path, "43", "C2 CompilerThre", 30, 10)
    thread(tmp_path, "44", "C1 CompilerThre", 5, 5)
    thread(tmp_path, "45", "GC Thread#0", 7, 1)
    thread(tmp_path, "46", "elasticsearch[", 500, 500)
    thread(tmp_path, "47", "odd) (name", 900, 0)  # the name is what lies between the first ( and the last )
    threads = threadcpu.ThreadCpu(42, proc=tmp_path)
    assert threads.counters() == {"jit_cpu_ms": 50 * MS_PER_TICK, "gc_cpu_ms": 8 * MS_PER_TICK}

    # HotSpot ends a compiler thread whose queue drained: its time stays counted.
    thread(tmp_path, "43", "C2 CompilerThre", 40, 10)
    threads.counters()
    (tmp_path / "42" / "task" / "43" / "stat").unlink()
    (tmp_path / "42" / "task" / "43").rmdir()
    assert threads.counters()["jit_cpu_ms"] == 60 * MS_PER_TICK
    # Its id given to a new compiler thread (another start time): both count.
    thread(tmp_path, "43", "C2 CompilerThre", 3, 0, started=900)
    assert threads.counters()["jit_cpu_ms"] == 63 * MS_PER_TICK
