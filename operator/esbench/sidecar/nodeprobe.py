"""What Elasticsearch does not report of its node, read from the kernel beside it.

The CPU time of the JVM's JIT compiler and GC threads (threadcpu), the major page faults of its
server process (pages read from disk on access: how an mmapped store is read), and what of its
index files the page cache holds (pagecache). The same reading serves a local node (esbench run,
which knows its server's pid and adds its memory cgroup's figures) and a pod's sidecar, which sees
the Elasticsearch container's processes through the pod's shared process namespace and its data
through the same volume, read-only.
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from esbench.sidecar import pagecache, threadcpu

# The server JVM's main class: an argument of its own (7.x), or its module's, MODULE/CLASS (8.x, started
# by a launcher JVM of another class).
SERVER_MAIN_CLASS = "org.elasticsearch.bootstrap.Elasticsearch"


def _is_server(arguments: list[bytes]) -> bool:
    main = SERVER_MAIN_CLASS.encode()
    return any(argument == main or argument.endswith(b"/" + main) for argument in arguments)


def server_pid(proc: Path = threadcpu.PROC) -> int | None:
    """The Elasticsearch server JVM among the processes this one can see, if it runs."""
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            arguments = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:  # ended since the listing
            continue
        if _is_server(arguments):
            return int(entry.name)
    return None


def major_faults(pid: int, proc: Path = threadcpu.PROC) -> int:
    """The process's major page faults so far (its threads' included): the 12th field of its stat."""
    stat = (proc / str(pid) / "stat").read_text()
    return int(stat[stat.rindex(")") + 2:].split()[9])


class NodeProbe:
    """One node's counters, read on each call. DATA: the node's path.data; FIND_PID: its server JVM's
    pid (a local node's, which esbench started; a pod's sidecar finds it: server_pid), asked again
    when that process is gone (a restarted node)."""

    def __init__(self, data: Path, find_pid: Callable[[], int | None] = server_pid, proc: Path = threadcpu.PROC):
        self._data, self._find_pid, self._proc = data, find_pid, proc
        self._pid: int | None = None
        self._threads: threadcpu.ThreadCpu | None = None

    def _running(self) -> bool:
        return self._pid is not None and (self._proc / str(self._pid)).exists()

    def counters(self) -> dict[str, Any]:
        """{} while no server runs; a counter that cannot be read is left out, the others still count."""
        if not self._running():
            self._pid = self._find_pid()
            self._threads = threadcpu.ThreadCpu(self._pid, self._proc) if self._pid else None
            if not self._running():
                return {}
        probed: dict[str, Any] = {}
        with contextlib.suppress(OSError):
            probed.update(self._threads.counters())
            probed["major_page_faults"] = major_faults(self._pid, self._proc)
        # Without fincore, or with files it may not read, the other counters still count.
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            probed["index_files"] = pagecache.by_extension(pagecache.index_files(self._data))
        return probed
