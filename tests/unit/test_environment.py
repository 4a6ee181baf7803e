"""The reproducibility record (runner.environment): node info as Elasticsearch gives it, the
track's identity, the load driver."""

import json
import os
import subprocess

import pytest

from esbench.api import models
from esbench.runner import environment
from esbench.runner.race import TRACKS_DIR
from tests.support.result_files import FIXTURES

NODE_INFO = {"nodes": {"abc": {
    "name": "es-0",
    "jvm": {"vm_name": "OpenJDK 64-Bit Server VM", "version": "17.0.15", "mem": {"heap_max_in_bytes": 1073741824}},
    "os": {"pretty_name": "Debian GNU/Linux 12 (bookworm)", "version": "6.1.0-28-amd64", "arch": "amd64",
           "available_processors": 2, "allocated_processors": 2},
    "settings": {"node": {"store": {"allow_mmap": "false"}}},
}}}
NODE_MEMORY = {"nodes": {"abc": {"os": {"mem": {"total_in_bytes": 25000000000},
                                        "cgroup": {"memory": {"limit_in_bytes": "2147483648"}}}}}}


def test_node_figures_are_taken_as_elasticsearch_reports_them():
    (node,) = environment.nodes(NODE_INFO, NODE_MEMORY)
    assert node == models.NodeEnvironment(
        node="es-0", jvm="OpenJDK 64-Bit Server VM 17.0.15", os="Debian GNU/Linux 12 (bookworm)",
        kernel="6.1.0-28-amd64", arch="amd64", available_processors=2, allocated_processors=2,
        memory_bytes=25000000000, cgroup_memory_limit_bytes=2147483648, heap_max_bytes=1073741824, mmap=False)
    assert environment.processors(NODE_INFO) == {"abc": 2}


def _node_stats_os(cgroup: dict | None) -> dict:
    """`GET _nodes/stats/os` as 8.7.1 answers it in a pod of 2 GiB (the JVM's total memory is the
    container's limit), with the cgroup section Elasticsearch read, or none where it found none."""
    os_stats = {
        "timestamp": 1764662400000, "cpu": {"percent": 12, "load_average": {"1m": 0.9, "5m": 0.7, "15m": 0.5}},
        "mem": {"total_in_bytes": 2147483648, "adjusted_total_in_bytes": 2147483648, "free_in_bytes": 402653184,
                "used_in_bytes": 1744830464, "free_percent": 19, "used_percent": 81},
        "swap": {"total_in_bytes": 0, "free_in_bytes": 0, "used_in_bytes": 0},
        **({"cgroup": cgroup} if cgroup else {}),
    }
    return {"_nodes": {"total": 1, "successful": 1, "failed": 0}, "cluster_name": "quickstart",
            "nodes": {"abc": {"timestamp": 1764662400000, "name": "es-0", "transport_address": "10.0.0.7:9300",
                              "host": "10.0.0.7", "ip": "10.0.0.7:9300", "roles": ["master", "data"],
                              "os": os_stats}}}


def _cgroup(limit_in_bytes: str, quota_micros: int = 200000) -> dict:
    """OsStats' cgroup section: Elasticsearch writes the same keys from cgroup v1's files and from
    v2's, the memory limit as the string it read (v1's memory.limit_in_bytes, v2's memory.max)."""
    return {"cpuacct": {"control_group": "/", "usage_nanos": 48221077000},
            "cpu": {"control_group": "/", "cfs_period_micros": 100000, "cfs_quota_micros": quota_micros,
                    "stat": {"number_of_elapsed_periods": 1520, "number_of_times_throttled": 3,
                             "time_throttled_nanos": 81000000}},
            "memory": {"control_group": "/", "limit_in_bytes": limit_in_bytes, "usage_in_bytes": "1288490188"}}


@pytest.mark.parametrize(("cgroup", "limit"), [
    (_cgroup("2147483648"), 2147483648),  # v1 or v2, limits.memory: 2Gi
    (_cgroup("max", quota_micros=-1), None),  # v2 without a limit
    (_cgroup("9223372036854771712", quota_micros=-1), None),  # v1 without a limit (4 KiB pages): not 8 EiB
    (_cgroup("9223372036854710272", quota_micros=-1), None),  # the same with 64 KiB pages
    (_cgroup("2147483648\n"), 2147483648),
    (None, None),  # no cgroup found: v1 in a container, without the hierarchy override
], ids=["2Gi", "v2-max", "v1-unlimited", "v1-unlimited-64k-pages", "newline", "no-cgroup"])
def test_the_memory_limit_of_a_nodes_cgroup_v1_or_v2(cgroup, limit):
    (node,) = environment.nodes(NODE_INFO, _node_stats_os(cgroup))
    assert node.cgroup_memory_limit_bytes == limit
    assert node.memory_bytes == 2147483648


def test_the_cpu_limit_of_a_nodes_cgroup_is_its_quota_of_each_period():
    for quota, cpus in ((50000, 0.5), (200000, 2.0), (-1, None)):  # -1: no quota
        (node,) = environment.nodes(NODE_INFO, _node_stats_os(_cgroup("max", quota_micros=quota)))
        assert node.cgroup_cpu_limit == cpus
    (node,) = environment.nodes(NODE_INFO, _node_stats_os(None))
    assert node.cgroup_cpu_limit is None


def test_no_cgroup_limit_and_the_default_mmap_setting():
    info = {"nodes": {"abc": {"name": "es-0", "os": {}}}}
    memory = {"nodes": {"abc": {"os": {"cgroup": {"memory": {"limit_in_bytes": "max"}}}}}}
    (node,) = environment.nodes(info, memory)
    assert node.cgroup_memory_limit_bytes is None and node.mmap is True and node.jvm is None


def test_a_cluster_that_will_not_say_gives_an_empty_record_not_an_error():
    def refuse(path):
        raise OSError("403 Forbidden")
    assert environment.read_nodes(refuse) == ([], {})


def test_a_real_node_info_answer_is_read():
    """What 8.7.1 answered to NODES_INFO_PATH before the fixed-rate fixture race."""
    info = json.loads((FIXTURES / "8.7.1-range-queries-fixed-rate" / "nodes-info.json").read_text())
    (node,) = environment.nodes(info, {})
    assert node.available_processors == 2 and node.heap_max_bytes > 0 and node.jvm and node.kernel
    assert node.mmap is True  # node.store.allow_mmap left at its default


def test_a_bundled_track_is_identified_by_its_files_and_the_shared_parts():
    workload = models.Workload(track="range-queries")
    identity = environment.track_identity(workload, TRACKS_DIR, rally_home=TRACKS_DIR)
    assert identity.source == models.TrackSource.BUNDLED and identity.revision is None and len(identity.sha256) == 64
    files = [*(TRACKS_DIR / "range-queries").glob("*.*"), *TRACKS_DIR.glob("*.j2")]
    assert identity.sha256 == environment.files_sha256([f for f in files if f.is_file()], TRACKS_DIR)
    other = environment.track_identity(models.Workload(track="codec-search"), TRACKS_DIR, rally_home=TRACKS_DIR)
    assert other.sha256 != identity.sha256


def test_a_git_track_is_identified_by_the_commit_rally_checked_out(tmp_path):
    checkout = tmp_path / ".rally" / "benchmarks" / "tracks" / "esbench"
    checkout.mkdir(parents=True)
    (checkout / "track.json").write_text("{}")
    git = ["git", "-C", str(checkout), "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "track"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    workload = models.Workload(track="t", source="Git", repository={"url": "https://example.invalid/t.git"})
    assert environment.track_identity(workload, TRACKS_DIR, rally_home=tmp_path).revision == head
    missing = models.Workload(track="geonames", source="RallyTracks")
    assert environment.track_identity(missing, TRACKS_DIR, rally_home=tmp_path).revision is None


def test_the_load_driver_names_its_kernel_cpu_and_processors():
    driver = environment.load_driver()
    assert driver.kernel and driver.processors >= 1 and driver.python


def write(directory, **files):
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (directory / name.replace("_", ".", 1)).write_text(text)


def test_the_cpu_cgroup_is_found_on_v1_on_v2_and_at_a_containers_root(tmp_path):
    write(tmp_path / "cpu,cpuacct" / "kubepods" / "pod1", cpu_stat="nr_periods 0\n")
    v1 = "12:memory:/kubepods/pod1\n4:cpu,cpuacct:/kubepods/pod1\n0::/\n"
    assert environment.cpu_cgroup(v1, tmp_path) == tmp_path / "cpu,cpuacct" / "kubepods" / "pod1"
    # In a container the hierarchy is mounted at its own cgroup: the path is not there, the root is.
    write(tmp_path / "v2", cpu_stat="nr_periods 0\n")
    assert environment.cpu_cgroup("0::/kubepods/pod2/c\n", tmp_path / "v2") == tmp_path / "v2"
    assert environment.cpu_cgroup("0::/\n", tmp_path / "nothing") is None


def test_throttling_over_the_race_is_read_from_v1_and_v2_cpu_stat(tmp_path):
    v1 = tmp_path / "v1"
    write(v1, cpu_stat="nr_periods 100\nnr_throttled 4\nthrottled_time 2500000000\n",
          cpu_cfs_quota_us="150000\n", cpu_cfs_period_us="100000\n")
    before = environment.cpu_cgroup_state(v1)
    assert before == {"periods": 100, "throttled_periods": 4, "throttled_seconds": 2.5, "limit": 1.5}
    v2 = tmp_path / "v2"
    write(v2, cpu_stat="usage_usec 9\nnr_periods 160\nnr_throttled 34\nthrottled_usec 4000000\n", cpu_max="100000 100000\n")
    driver = environment.load_driver(before, environment.cpu_cgroup_state(v2))
    assert (driver.cpu_limit, driver.cpu_periods, driver.cpu_throttled_periods, driver.cpu_throttled_seconds) == (1, 60, 30, 1.5)
    write(v2, cpu_max="max 100000\n")  # no quota: no limit, never throttled
    assert "limit" not in environment.cpu_cgroup_state(v2)
    assert environment.load_driver(None, None).cpu_periods is None


def test_the_load_driver_s_cpu_is_its_race_s_esrally_processes_however_many_share_its_cgroup(tmp_path):
    """Summed over the processes whose command line names the race id (esrally and its actors,
    which fork from it); a neighbour in the same cgroup, or another race, does not count."""
    ticks = os.sysconf("SC_CLK_TCK")

    def process(pid: int, cmdline: str, utime: int, stime: int) -> None:
        directory = tmp_path / str(pid)
        directory.mkdir()
        (directory / "cmdline").write_bytes((cmdline.replace(" ", "\0") + "\0").encode())
        # pid (comm) state ppid ... utime and stime are fields 14 and 15; a comm may hold ") ".
        fields = ["S", "1"] + ["0"] * 9 + [str(utime), str(stime)] + ["0"] * 30
        (directory / "stat").write_text(f"{pid} (python3 a) b) " + " ".join(fields))

    process(10, "python esrally_launcher.py race --race-id=r-1 --pipeline=benchmark-only", 3 * ticks, ticks)
    process(11, "python esrally_launcher.py race --race-id=r-1 --pipeline=benchmark-only", ticks, 0)
    process(12, "python esrally_launcher.py race --race-id=r-2", 50 * ticks, 0)
    process(14, "python esrally_launcher.py race --race-id=r-10", 70 * ticks, 0)
    process(13, "java org.elasticsearch.bootstrap.Elasticsearch", 90 * ticks, 0)
    counters = environment.load_driver_counters("r-1", proc=tmp_path)
    assert counters["cpu_seconds"] == pytest.approx(5.0)
    assert 1 <= counters["processors"] <= len(os.sched_getaffinity(0))
