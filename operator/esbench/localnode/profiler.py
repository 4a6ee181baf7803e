"""async-profiler attached to a node that esbench started here, for one race at a time.

The library and its JFR converter come from Maven Central (sha1-pinned below). The race attaches
it to the running server JVM through the JDK's own attach mechanism (`jcmd PID JVMTI.agent_load`,
as the node's user), starts a JFR recording before esrally and stops it after: a node that a
sweep shares between runs is profiled run by run. Each task's window is then cut out of the
recording into collapsed stacks and a flame graph. `install` puts both files in a folder: the
esbench image carries them there for Elasticsearch pods on Kubernetes.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from esbench.analysis import asyncprofiler
from esbench.api import models
from esbench.localnode import maven
from esbench.localnode.localcluster import LocalCluster, cache_root

VERSION = asyncprofiler.VERSION
LIBRARY_JAR = (f"tools/profiler/async-profiler/{VERSION}/async-profiler-{VERSION}.jar",
               "16d04649a48f703a0576815084c4729c305baebb")
# The converter's latest release on Maven Central when this was written (it has --diff since 4.4).
CONVERTER_JAR = ("tools/profiler/jfr-converter/4.5/jfr-converter-4.5.jar", "470738b623ccf27be216353596ba6ff6c80c72b9")
ARCHITECTURES = {"x86_64": "linux-x64", "amd64": "linux-x64", "aarch64": "linux-arm64", "arm64": "linux-arm64"}


def _artefact(path_and_sha1: tuple[str, str], cache: Path) -> Path:
    path, sha1 = path_and_sha1
    return maven.download(f"{maven.CENTRAL}/{path}", cache / "async-profiler" / Path(path).name, sha1)


def library(cache: Path) -> Path:
    """libasyncProfiler.so for this machine, out of the sha1-verified jar."""
    folder = ARCHITECTURES.get(platform.machine())
    if folder is None:
        raise RuntimeError(f"async-profiler {VERSION} has no Linux library for {platform.machine()}")
    target = cache / "async-profiler" / VERSION / folder / asyncprofiler.LIBRARY
    if not target.exists():
        with zipfile.ZipFile(_artefact(LIBRARY_JAR, cache)) as jar:
            target.parent.mkdir(parents=True, exist_ok=True)
            partial = target.with_name(target.name + ".part")
            partial.write_bytes(jar.read(f"{folder}/{asyncprofiler.LIBRARY}"))
            partial.rename(target)
    return target


def converter(cache: Path) -> Path:
    return _artefact(CONVERTER_JAR, cache)


def install(folder: Path, cache: Path | None = None) -> None:
    """The library and the converter, verified, as FOLDER/libasyncProfiler.so and FOLDER/jfr-converter.jar."""
    folder.mkdir(parents=True, exist_ok=True)
    cache = cache or cache_root()
    shutil.copyfile(library(cache), folder / asyncprofiler.LIBRARY)
    shutil.copyfile(converter(cache), folder / asyncprofiler.CONVERTER)


def diff_flame_graph(java_home: Path, baseline: Path, current: Path, flame_graph: Path, cache: Path | None = None) -> None:
    """async-profiler's differential flame graph of two collapsed-stack files: current drawn, coloured
    by how each frame's self samples moved from the baseline."""
    asyncprofiler.convert(java_home / "bin" / "java", converter(cache or cache_root()), "--diff", str(baseline),
                          str(current), str(flame_graph))


class NodeProfiler:
    """Profiles the node's server JVM race by race (esbench.runner.race.Profiler)."""

    def __init__(self, cluster: LocalCluster, profile: models.Profile, cache: Path | None = None):
        if cluster.java_home is None:
            raise RuntimeError("the node's JDK is unknown: it cannot be profiled")
        self._cluster = cluster
        self._jdk = cluster.java_home
        self._cache = cache or cache_root()
        self._profile = profile
        # In the node's own folder: its user cannot read root's cache.
        self._library = cluster.base_dir / "libasyncProfiler.so"
        self._recording = cluster.base_dir / "profile.jfr"
        self.recording = asyncprofiler.recording(profile)

    def start(self) -> None:
        if not self._library.exists():  # downloaded at the first race, not before a node that may never race
            shutil.copyfile(library(self._cache), self._library)
            self._library.chmod(0o755)
        self._recording.unlink(missing_ok=True)  # a run's recording only
        self._command(asyncprofiler.start_options(self._profile, str(self._recording)))

    def stop(self) -> None:
        self._command(f"stop,file={self._recording}")

    def cut(self, start: float, end: float, stacks: Path, flame_graph: Path, title: str) -> None:
        """The samples between start and end (seconds since the epoch) as collapsed stacks and a flame graph."""
        java, jar = self._jdk / "bin" / "java", converter(self._cache)
        asyncprofiler.cut(java, jar, self._profile.event, self._recording, start, end, stacks)
        # The flame graph leaves out frames under 0.05 % of the samples: a bound on its size.
        asyncprofiler.cut(java, jar, self._profile.event, self._recording, start, end, flame_graph,
                          "--title", title, "--minwidth", "0.05")

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


if __name__ == "__main__":  # python -m esbench.localnode.profiler FOLDER: what the esbench image carries
    install(Path(sys.argv[1]))
