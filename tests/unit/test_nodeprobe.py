"""What a node's probe reads beside Elasticsearch (sidecar.nodeprobe): the server JVM found among the
processes by its main class, as a pod's sidecar finds it through the shared process namespace (on the
real /proc, and on one laid out in a folder as the kernel lays it out); its major page faults; its JIT
threads' CPU and its index files in the page cache."""

import subprocess
import sys

from esbench.sidecar import nodeprobe, threadcpu
from tests.support.waiting import wait_for
from tests.unit.test_threadcpu import MS_PER_TICK


def process(proc, pid: int, arguments: list[str], majflt: int = 0) -> None:
    folder = proc / str(pid)
    (folder / "task").mkdir(parents=True, exist_ok=True)
    (folder / "cmdline").write_bytes(b"\0".join(a.encode() for a in arguments) + b"\0")
    # pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime ...
    (folder / "stat").write_text(f"{pid} (java) S 1 1 1 0 -1 0 7 0 {majflt} 0 50 5 0 0 20 0 90 0 100 0 0\n")
    thread = folder / "task" / str(pid + 1)
    thread.mkdir(exist_ok=True)
    (thread / "stat").write_text(f"{pid + 1} (C2 CompilerThre) S 1 1 1 0 -1 0 0 0 0 0 {pid} 0 0 0 20 0 90 0 100 0 0\n")


LAUNCHER = ["/usr/bin/java", "-cp", "lib/launcher/*", "org.elasticsearch.launcher.CliToolLauncher"]
SERVER = ["/usr/bin/java", "-Xms1g", "-cp", "lib/*", nodeprobe.SERVER_MAIN_CLASS]  # 7.x
MODULE_SERVER = ["/usr/bin/java", "-Xms1g", "-m", f"org.elasticsearch.server/{nodeprobe.SERVER_MAIN_CLASS}"]  # 8.x


def test_the_server_jvm_is_found_by_its_main_class_not_its_launcher(tmp_path):
    (tmp_path / "self").mkdir()  # the kernel's other entries are not processes
    process(tmp_path, 7, LAUNCHER)
    process(tmp_path, 9, ["/bin/grep", f"{nodeprobe.SERVER_MAIN_CLASS}.x"])  # a mere mention of it, not the argument
    assert nodeprobe.server_pid(tmp_path) is None
    process(tmp_path, 12, MODULE_SERVER, majflt=345)
    assert nodeprobe.server_pid(tmp_path) == 12
    assert nodeprobe.major_faults(12, tmp_path) == 345
    (tmp_path / "12" / "cmdline").unlink()
    process(tmp_path, 13, SERVER)
    assert nodeprobe.server_pid(tmp_path) == 13


def test_the_kernels_own_files_of_a_process_with_the_main_class_as_an_argument_are_read(tmp_path):
    """The real /proc/PID of a process, seen alone (other nodes on this host must not answer)."""
    pretender = subprocess.Popen([sys.executable, "-c", "import signal; signal.pause()", nodeprobe.SERVER_MAIN_CLASS])
    try:
        (tmp_path / str(pretender.pid)).symlink_to(threadcpu.PROC / str(pretender.pid))
        # Until it has exec'd, the child's cmdline is its parent's.
        wait_for(lambda: nodeprobe.server_pid(tmp_path) == pretender.pid, 10, what="the process to be found")
        assert nodeprobe.major_faults(pretender.pid) >= 0
        assert set(nodeprobe.NodeProbe(tmp_path / "data", lambda: pretender.pid).counters()) == {
            "jit_cpu_ms", "gc_cpu_ms", "major_page_faults", "index_files"}
    finally:
        pretender.kill()
        pretender.wait()


def test_the_probe_reads_the_server_and_finds_it_again_once_it_restarts(tmp_path):
    proc, data = tmp_path / "proc", tmp_path / "data"
    proc.mkdir()
    probe = nodeprobe.NodeProbe(data, lambda: nodeprobe.server_pid(proc), proc)
    assert probe.counters() == {}  # no node yet
    process(proc, 20, SERVER, majflt=3)
    shard = data / "indices" / "uuid" / "0" / "index"
    shard.mkdir(parents=True)
    (shard / "_0.fdt").write_bytes(b"x" * 10)
    counters = probe.counters()
    assert counters["major_page_faults"] == 3 and counters["jit_cpu_ms"] == 20 * MS_PER_TICK
    assert counters["index_files"]["fdt"]["size"] == 10
    # The node restarted: another pid, read from then on.
    for path in sorted((proc / "20").rglob("*"), reverse=True):
        path.unlink() if path.is_file() else path.rmdir()
    (proc / "20").rmdir()
    process(proc, 40, SERVER, majflt=1)
    assert probe.counters()["major_page_faults"] == 1


def test_a_known_pid_that_ended_gives_nothing_rather_than_another_nodes_counters(tmp_path):
    """A local node's probe knows its pid: once that process is gone it must not read another node's."""
    proc = tmp_path / "proc"
    process(proc, 30, SERVER)
    assert nodeprobe.NodeProbe(tmp_path, lambda: 99, proc).counters() == {}
