"""esrally as a process: how to start it, run it within a time while its output is streamed, and
leave no Rally process of the race behind (Rally's actor system outlives esrally)."""

from __future__ import annotations

import collections
import os
import shlex
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

LAUNCHER = Path(__file__).with_name("esrally_launcher.py")

# Rally refuses to start while another Rally process runs on the machine (never in a pod; on
# a shared machine, e.g. beside Rally pods of a local Kubernetes node, it happens).
OTHER_RALLY_RUNNING = "There are other Rally processes running"


def esrally_argv(esrally: str) -> list[str]:
    """How to start esrally: its own interpreter running LAUNCHER (Rally's half-second polling
    for every race) when esrally is a Python script, as pip installs it; else esrally itself."""
    path = shutil.which(esrally)
    if path:
        with open(path, "rb") as script:
            first_line = script.readline().decode(errors="replace")
        if first_line.startswith("#!") and "python" in first_line:
            return [*shlex.split(first_line[2:]), str(LAUNCHER)]
    return [esrally]


def rally_processes(rally_home: Path | None = None) -> list[int]:
    """Pids of Rally processes as Rally itself recognises them (an `esrally` process, zombies
    included, or a python whose command line mentions esrally); with rally_home, only those
    started with that RALLY_HOME, i.e. by this runner."""
    found = []
    marker = f"RALLY_HOME={rally_home}".encode() if rally_home else None
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            name = Path(f"/proc/{entry}/comm").read_text().strip()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            is_rally = name in ("esrally", "rally") or (
                name.lower().startswith("python")
                and any(b"esrally" in part for part in cmdline)
                and not any(b"esrallyd" in part for part in cmdline)
            )
            if is_rally and (marker is None or marker in Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")):
                found.append(int(entry))
        except OSError:  # gone meanwhile, or not ours to read
            continue
    return found


def wait_for_other_races(timeout: float, out: IO[str]) -> None:
    """Rally refuses to start while any other Rally process runs on the machine (its actor
    system is a per-machine singleton). In a pod there is none; on a shared machine wait."""
    started = time.monotonic()
    announced = False
    while (others := rally_processes()) and time.monotonic() < started + timeout:
        if not announced:
            print(f"esbench: waiting for other Rally processes to finish: {others}", file=out, flush=True)
            announced = True
        time.sleep(1)
    if announced:
        print(f"esbench: waited {time.monotonic() - started:.0f}s for other Rally processes", file=out, flush=True)


def stop_leftover_actors(rally_home: Path, grace: float = 30.0) -> None:
    """Rally's actor system daemonizes (its own session), so it outlives esrally by a few
    seconds, and a next race would refuse to start. Wait for it; end it if it lingers. Only
    processes carrying this race's RALLY_HOME are touched."""
    deadline = time.monotonic() + grace
    while rally_processes(rally_home) and time.monotonic() < deadline:
        time.sleep(0.5)
    for _ in range(5):  # a dying actor may still fork: repeat until none is left
        leftovers = rally_processes(rally_home)
        if not leftovers:
            return
        for pid in leftovers:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.5)


def wait_or_stop(process: subprocess.Popen[str], timeout: float, stop: threading.Event | None) -> int | None:
    """process's exit status, or None once timeout has passed or stop is set."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return process.wait(timeout=min(1.0, max(0.0, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            if time.monotonic() >= deadline or (stop is not None and stop.is_set()):
                return None


def run_esrally(
    command: list[str], env: dict[str, str], timeout: float, out: IO[str], redact: Callable[[str], str], rally_home: Path,
    stop: threading.Event | None = None,
) -> tuple[int | None, str]:
    """Run esrally, streaming its output (redacted) to out; return (exit status, or None once
    timeout has passed or stop is set, the output's tail for failure classification). No Rally
    process of this race is left running afterwards."""
    tail: collections.deque[str] = collections.deque(maxlen=400)
    process = subprocess.Popen(
        command,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
        errors="replace",
        start_new_session=True,  # its own process group, to stop it on timeout
    )

    def stream() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            line = redact(line.rstrip("\n"))
            tail.append(line)
            print(line, file=out, flush=True)

    # Read in a thread: Rally's daemonized actor system inherits the pipe, so end of output
    # only comes once every actor has gone, which must not be waited for without a bound.
    reader = threading.Thread(target=stream, name="esrally-output", daemon=True)
    reader.start()
    try:
        status = wait_or_stop(process, timeout, stop)
        if status is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
    except BaseException:  # interrupted (Ctrl-C or SIGTERM in the CLI): esrally must not race on alone
        os.killpg(process.pid, signal.SIGKILL)
        stop_leftover_actors(rally_home, grace=0.0)
        raise
    # Once stopped the actors would carry on: end them at once; else give them time to exit.
    stop_leftover_actors(rally_home, grace=30.0 if status is not None else 0.0)
    reader.join(timeout=10)
    return status, "\n".join(tail)
