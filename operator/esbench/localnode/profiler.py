"""async-profiler attached to a node that esbench started here, for one race at a time.

The library and its JFR converter come from Maven Central (sha1-pinned below). The race attaches
it to the running server JVM through the JDK's own attach mechanism (`jcmd PID JVMTI.agent_load`,
as the node's user), starts a JFR recording before esrally and stops it after: a node that a
sweep shares between runs is profiled run by run. Each task's window is then cut out of the
recording (the converter's --from/--to, epoch milliseconds) into collapsed stacks and a flame
graph.

`cpu` samples with async-profiler's `ctimer` (a CPU-time timer per thread), not `cpu`, which
needs perf_events and falls back to a timer anyway where perf_event_paranoid or a pod forbids it:
one event everywhere, so that profiles made on different machines compare.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import zipfile
from dataclasses import dataclass
from pathlib import Path

from esbench.api import models
from esbench.localnode import maven
from esbench.localnode.localcluster import LocalCluster, cache_root

VERSION = "4.6"
LIBRARY_JAR = (f"tools/profiler/async-profiler/{VERSION}/async-profiler-{VERSION}.jar",
               "16d04649a48f703a0576815084c4729c305baebb")
# The converter's latest release on Maven Central when this was written (it has --diff since 4.4).
CONVERTER_JAR = ("tools/profiler/jfr-converter/4.5/jfr-converter-4.5.jar", "470738b623ccf27be216353596ba6ff6c80c72b9")
ARCHITECTURES = {"x86_64": "linux-x64", "amd64": "linux-x64", "aarch64": "linux-arm64", "arm64": "linux-arm64"}


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


def _artefact(path_and_sha1: tuple[str, str], cache: Path) -> Path:
    path, sha1 = path_and_sha1
    return maven.download(f"{maven.CENTRAL}/{path}", cache / "async-profiler" / Path(path).name, sha1)


def library(cache: Path) -> Path:
    """libasyncProfiler.so for this machine, out of the sha1-verified jar."""
    folder = ARCHITECTURES.get(platform.machine())
    if folder is None:
        raise RuntimeError(f"async-profiler {VERSION} has no Linux library for {platform.machine()}")
    target = cache / "async-profiler" / VERSION / folder / "libasyncProfiler.so"
    if not target.exists():
        with zipfile.ZipFile(_artefact(LIBRARY_JAR, cache)) as jar:
            target.parent.mkdir(parents=True, exist_ok=True)
            partial = target.with_name(target.name + ".part")
            partial.write_bytes(jar.read(f"{folder}/libasyncProfiler.so"))
            partial.rename(target)
    return target


def interval(profile: models.Profile) -> str | None:
    if profile.interval_millis is not None:
        return f"{profile.interval_millis}ms"
    return SAMPLING[profile.event].interval


def convert(java_home: Path, cache: Path, *args: str) -> None:
    """Run async-profiler's converter (jfrconv) with these arguments."""
    command = [str(java_home / "bin" / "java"), "-jar", str(_artefact(CONVERTER_JAR, cache)), *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"async-profiler's converter failed: {done.stdout[-1000:]}{done.stderr[-1000:]}")


def diff_flame_graph(java_home: Path, baseline: Path, current: Path, flame_graph: Path, cache: Path | None = None) -> None:
    """async-profiler's differential flame graph of two collapsed-stack files: current drawn, coloured
    by how each frame's self samples moved from the baseline."""
    convert(java_home, cache or cache_root(), "--diff", str(baseline), str(current), str(flame_graph))


class NodeProfiler:
    """Profiles the node's server JVM race by race (esbench.runner.race.Profiler)."""

    def __init__(self, cluster: LocalCluster, profile: models.Profile, cache: Path | None = None):
        if cluster.java_home is None:
            raise RuntimeError("the node's JDK is unknown: it cannot be profiled")
        self._cluster = cluster
        self._jdk = cluster.java_home
        self._cache = cache or cache_root()
        self._sampling = SAMPLING[profile.event]
        self._interval = interval(profile)
        # In the node's own folder: its user cannot read root's cache.
        self._library = cluster.base_dir / "libasyncProfiler.so"
        self._recording = cluster.base_dir / "profile.jfr"
        self.recording = models.ProfileRecording(profiler=f"async-profiler {VERSION}", event=profile.event,
                                                 interval=self._interval)

    def start(self) -> None:
        if not self._library.exists():  # downloaded at the first race, not before a node that may never race
            shutil.copyfile(library(self._cache), self._library)
            self._library.chmod(0o755)
        self._recording.unlink(missing_ok=True)  # a run's recording only
        options = f"start,event={self._sampling.event},jfr,file={self._recording}"
        self._command(options + (f",interval={self._interval}" if self._interval else ""))

    def stop(self) -> None:
        self._command(f"stop,file={self._recording}")

    def cut(self, start: float, end: float, stacks: Path, flame_graph: Path, title: str) -> None:
        """The samples between start and end (seconds since the epoch) as collapsed stacks and a flame graph."""
        window = ["--from", str(int(start * 1000)), "--to", str(int(end * 1000))]
        # The flame graph leaves out frames under 0.05 % of the samples: a bound on its size.
        for output, extra in ((stacks, []), (flame_graph, ["--title", title, "--minwidth", "0.05"])):
            # --norm: hidden classes' and lambdas' names without their per-JVM ids, so that runs compare.
            convert(self._jdk, self._cache, self._sampling.reader, "--dot", "--norm", "-o", output.suffix[1:], *window,
                    *extra, str(self._recording), str(output))

    def _command(self, options: str) -> None:
        """One async-profiler command to the running node (the attach mechanism's `load` with options)."""
        jcmd = self._jdk / "bin" / "jcmd"
        # jcmd splits its arguments at spaces and '=' unless quoted: the options are one quoted argument.
        command = [str(jcmd), str(self._cluster.server_pid()), "JVMTI.agent_load", str(self._library), f'"{options}"']
        if self._cluster.user and os.geteuid() == 0:  # attach works only as the JVM's own user
            command = ["runuser", "-u", self._cluster.user, "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, timeout=60)
        if done.returncode != 0 or "return code: 0" not in done.stdout:
            # async-profiler writes why to the JVM's own output, the node's log.
            raise RuntimeError(f"async-profiler {options.split(',')[0]} failed: {done.stdout.strip()} "
                               f"{done.stderr.strip()} {self._cluster.log_tail(3)}")
