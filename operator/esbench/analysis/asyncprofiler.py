"""async-profiler's vocabulary, wherever it runs: how each esbench profile event is recorded and read
back, the options that start it, and its converter (jfrconv), which cuts a JFR recording by time.

`cpu` samples with async-profiler's `ctimer` (a CPU-time timer per thread), not `cpu`, which
needs perf_events and falls back to a timer anyway where perf_event_paranoid or a pod forbids it:
one event everywhere, so that profiles made on different machines compare.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from esbench.api import models

VERSION = "4.6"
LIBRARY = "libasyncProfiler.so"
CONVERTER = "jfr-converter.jar"
# A node that records itself (Kubernetes) closes a file at every turn of the loop: the longest a
# race waits for its last samples to be readable.
RECORDING_LOOP_SECONDS = 30
RECORDING_LOOP = f"{RECORDING_LOOP_SECONDS}s"


@dataclass(frozen=True)
class Sampling:
    event: str  # async-profiler's event
    reader: str  # the converter's option that reads those samples back
    interval: str | None  # async-profiler's default when None


SAMPLING = {
    models.ProfileEvent.CPU: Sampling("ctimer", "--cpu", "10ms"),
    models.ProfileEvent.WALL: Sampling("wall", "--wall", "50ms"),
    models.ProfileEvent.ALLOC: Sampling("alloc", "--alloc", None),
    models.ProfileEvent.LOCK: Sampling("lock", "--lock", None),
}


def interval(profile: models.Profile) -> str | None:
    if profile.interval_millis is not None:
        return f"{profile.interval_millis}ms"
    return SAMPLING[profile.event].interval


def recording(profile: models.Profile) -> models.ProfileRecording:
    return models.ProfileRecording(profiler=f"async-profiler {VERSION}", event=profile.event, interval=interval(profile))


def start_options(profile: models.Profile, file: str, loop: str | None = None) -> str:
    """The agent's options that start recording PROFILE as JFR into FILE; with LOOP (e.g. 30s), a new
    file at every turn, each closed whole (FILE then names them by their start, %t)."""
    options = [f"start,event={SAMPLING[profile.event].event},jfr"]
    if interval(profile):
        options.append(f"interval={interval(profile)}")
    if loop:
        options.append(f"loop={loop}")
    return ",".join([*options, f"file={file}"])


def convert(java: Path, converter: Path, *args: str) -> None:
    """Run async-profiler's converter with these arguments."""
    command = [str(java), "-jar", str(converter), *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"async-profiler's converter failed: {done.stdout[-1000:]}{done.stderr[-1000:]}")


def cut(java: Path, converter: Path, event: models.ProfileEvent, recording: Path, start: float, end: float,
        output: Path, *extra: str) -> None:
    """The samples of RECORDING between START and END (seconds since the epoch) into OUTPUT, whose
    suffix says the format (collapsed, html)."""
    window = ["--from", str(int(start * 1000)), "--to", str(int(end * 1000))]
    # --norm: hidden classes' and lambdas' names without their per-JVM ids, so that runs compare.
    convert(java, converter, SAMPLING[event].reader, "--dot", "--norm", "-o", output.suffix[1:], *window, *extra,
            str(recording), str(output))
