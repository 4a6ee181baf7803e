"""A real single-node Elasticsearch on this machine, for tests and for local mode.

The distribution is Maven Central's integ-test-zip: the only Elasticsearch artefact reachable
from a registry. It is minimal (no painless, ingest processors or analysis-common; see
docs) and has no bundled JDK, so a JDK on this machine runs it (17 or newer; 21 or newer for
9.x); from 8.19 on it also lacks `GET /`, which esbench adds (esbench.localnode.rootendpoint).
Elasticsearch refuses to run as root, so as root it is started as a system user (created when
missing).

Every instance gets its own directory (unpacked distribution, config, data, logs) so several
can run side by side and nothing is written into the download cache.
"""

from __future__ import annotations

import os
import pwd
import secrets
import shlex
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from esbench.localnode import maven, rootendpoint
from esbench.localnode.cgroups import CpuCgroup, MemoryCgroup, Unavailable
from esbench.localnode.cpus import on_cpus
from esbench.runner.nodestats import LOCAL_NODE
from esbench.runner.target import Target
from esbench.sidecar.nodeprobe import NodeProbe

MAVEN_BASE = f"{maven.CENTRAL}/org/elasticsearch/distribution/integ-test-zip/elasticsearch"
SYSTEM_USER = "esbench-es"
PID_FILE = "elasticsearch.pid"  # written by the node itself (its -p option), in its base folder
# Off on every node started here unless the caller's settings turn it on: a nearly full build disk
# must not leave replicas or new indices unassigned. A production node would refuse them.
DISK_THRESHOLD = "cluster.routing.allocation.disk.threshold_enabled"
# Versions whose zip Maven Central serves here without its .sha1: the SHA-1 recorded at the first
# download (2026-11-24), so that a later download is held to the same bytes.
RECORDED_SHA1 = {"9.2.4": "54ca6e33db3623ecf3bed523f9b5c494993ff692"}


def cache_root() -> Path:
    return Path(os.environ.get("ESBENCH_CACHE") or Path.home() / ".cache" / "esbench")


def snapshot_root() -> Path:
    """Where local nodes keep workload.reuseIndex's snapshot repositories, one folder per version
    (a repository one version wrote is not for older ones). Not in the cache: as root, that is
    in root's home, which the node's user cannot enter."""
    return Path(os.environ.get("ESBENCH_SNAPSHOTS") or "/var/tmp/esbench-snapshots")


def distribution_zip(version: str, cache: Path | None = None) -> Path:
    """The integ-test-zip for VERSION, downloaded once into the cache and sha1-verified."""
    target = (cache or cache_root()) / "elasticsearch" / f"elasticsearch-{version}.zip"
    if target.exists():
        return target
    url = f"{MAVEN_BASE}/{version}/elasticsearch-{version}.zip"
    return maven.download(url, target, RECORDED_SHA1.get(version) or maven.published_sha1(url, RECORDED_SHA1))


JVM_DIR = Path("/usr/lib/jvm")  # where Debian's and Adoptium's packages put their JDKs


def java_home(version: str) -> Path:
    """The JDK to run Elasticsearch VERSION with (9.x needs Java 21 or newer, 7.17 and 8.x 17):
    ES_JAVA_HOME or JAVA_HOME if set, else the JDK behind `java` on PATH if new enough, else the
    newest one under /usr/lib/jvm."""
    needed = 21 if int(version.split(".")[0]) >= 9 else 17
    for name in ("ES_JAVA_HOME", "JAVA_HOME"):
        if os.environ.get(name):
            home = Path(os.environ[name])
            if (found := rootendpoint.java_feature_version(home)) < needed:
                raise RuntimeError(f"Elasticsearch {version} needs Java {needed} or newer; {name}={home} is Java {found}")
            return home
    on_path = shutil.which("java")
    preferred = Path(os.path.realpath(on_path)).parent.parent if on_path else None
    homes = {release.parent for release in JVM_DIR.glob("*/release")}
    if preferred and (preferred / "release").exists():
        homes.add(preferred)
    versions = {home: rootendpoint.java_feature_version(home) for home in homes}
    # The one on PATH first, then the newest.
    for home in sorted(versions, key=lambda home: (home != preferred, -versions[home])):
        if versions[home] >= needed:
            return home
    raise RuntimeError(f"Elasticsearch {version} needs a JDK {needed} or newer: none on PATH or under {JVM_DIR}; "
                       "set ES_JAVA_HOME")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ensure_system_user(name: str = SYSTEM_USER) -> None:
    try:
        pwd.getpwnam(name)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
            check=True,
        )


def unpack(archive: Path, target: Path) -> Path:
    """Unzip keeping the executable bits (zipfile drops them), return the distribution home."""
    with zipfile.ZipFile(archive) as zf:
        for info in zf.infolist():
            path = Path(zf.extract(info, target))
            mode = info.external_attr >> 16
            if mode and not info.is_dir():
                path.chmod(stat.S_IMODE(mode))
    (home,) = [p for p in target.iterdir() if p.is_dir() and p.name.startswith("elasticsearch-")]
    return home


def _make_certificates(folder: Path) -> None:
    """A throw-away CA and a certificate for localhost/127.0.0.1 signed by it (as ECK makes)."""
    folder.mkdir()

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "7", "-subj", "/CN=esbench local CA",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
            "-keyout", str(folder / "ca.key"), "-out", str(folder / "ca.crt"))
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost",
            "-keyout", str(folder / "http.key"), "-out", str(folder / "http.csr"))
    (folder / "san.ext").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    openssl("x509", "-req", "-days", "7", "-in", str(folder / "http.csr"), "-CA", str(folder / "ca.crt"),
            "-CAkey", str(folder / "ca.key"), "-CAcreateserial", "-extfile", str(folder / "san.ext"),
            "-out", str(folder / "http.crt"))


@dataclass
class LocalCluster:
    version: str
    url: str
    base_dir: Path
    process: subprocess.Popen
    log_file: Path
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    ca_file: str | None = None
    memory: MemoryCgroup | None = None  # the node's own memory cgroup (as root): its limit bounds the page cache
    cpu: CpuCgroup | None = None  # the node's own CPU cgroup, where it has a CPU limit
    java_home: Path | None = None  # the JDK the node runs on
    user: str | None = None  # the system user the node runs as (when started as root)
    snapshot_repository: Path | None = None  # a folder of its path.repo, for snapshot repositories

    @property
    def pid_file(self) -> Path:
        return self.base_dir / PID_FILE

    def server_pid(self) -> int:
        """The Elasticsearch server JVM's pid (not its launcher's), as the node wrote it."""
        return int(self.pid_file.read_text().strip())

    @property
    def client(self) -> Target:
        return Target(self.url, self.username, self.password, self.ca_file)

    def probe(self) -> Callable[[], dict[str, dict[str, Any]]]:
        """For one race: what Elasticsearch does not report of this node, read beside each of its
        _nodes/stats answers (NodeProbe; with a memory cgroup, its major page faults, of all the
        node's processes, and its page cache)."""
        node = NodeProbe(self.base_dir / "data", self.server_pid)
        memory = self.memory

        def counters() -> dict[str, dict[str, Any]]:
            return {LOCAL_NODE: {**node.counters(), **(memory.counters() if memory else {})}}

        return counters

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def wait_for_health(self, status: str = "yellow", timeout: float = 120.0) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"Elasticsearch {self.version} exited with {self.process.returncode}:\n{self.log_tail()}")
            try:
                return self.client.get(f"_cluster/health?wait_for_status={status}&timeout=2s", timeout=10)
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"Elasticsearch {self.version} not {status} after {timeout}s:\n{self.log_tail()}")
            time.sleep(1)

    def stop(self, keep_files: bool = False) -> None:
        """Stop the whole process group (runuser, the launcher and the server JVM)."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        for cgroup in (self.memory, self.cpu):
            if cgroup:
                cgroup.remove()
        if not keep_files:
            shutil.rmtree(self.base_dir, ignore_errors=True)


def start(
    version: str,
    *,
    heap: str = "1g",
    base_dir: Path | None = None,
    user: str = SYSTEM_USER,
    cache: Path | None = None,
    timeout: float = 180.0,
    secure: bool = False,
    extra_settings: dict[str, Any] | None = None,
    home: Path | None = None,
    memory_limit: int | None = None,
    cpu_limit: float | None = None,
    cpus: tuple[int, ...] | None = None,
    snapshot_repository: Path | None = None,
) -> LocalCluster:
    """Unpack, configure and start a single-node cluster on loopback; return once it is yellow.

    secure=True mirrors what ECK sets up: HTTPS with a certificate from a private CA (for
    localhost) and a superuser with a random password (on the returned LocalCluster).
    extra_settings are passed as -E settings after ours (so they win; the user's config).
    home: an already unpacked distribution (e.g. a full one) to run instead of the
    integ-test-zip; it is copied first (its launcher writes logs/gc.log into its home).
    As root the node runs in a memory cgroup of its own (LocalCluster.memory), limited to
    memory_limit bytes when given, as a pod's memory limit would: heap, native memory and page
    cache together. A limit that cannot be honoured (not root, no memory controller) is an error.
    cpu_limit: CPUs the node may use of each CFS period (a CPU cgroup of its own, as a pod's CPU
    limit); likewise an error where it cannot be honoured.
    cpus: the CPUs the node may run on (all of this process's by default).
    snapshot_repository: a folder the node may write snapshots to (its path.repo), kept across nodes.
    """
    # Not under pytest's tmp_path: those folders are 0700 root and the ES user could not enter.
    base = Path(base_dir) if base_dir else Path(tempfile.mkdtemp(prefix=f"esbench-es-{version}-"))
    base.mkdir(parents=True, exist_ok=True)
    home, jdk = _distribution(version, cache, home, base)
    java_env = {"ES_JAVA_HOME": str(jdk)} if jdk else {}
    config, data, logs = base / "config", base / "data", base / "logs"
    shutil.copytree(home / "config", config)  # ES writes its keystore into the config folder
    data.mkdir()
    logs.mkdir()
    (base / "tmp").mkdir()
    username = password = ca_file = None
    if secure:
        username, password = _superuser(home, config, java_env)
        ca_file = str(config / "certs" / "ca.crt")
    as_root = os.geteuid() == 0
    if as_root:
        _hand_over(base, user)
    if snapshot_repository is not None:
        snapshot_repository.mkdir(parents=True, exist_ok=True)
        if as_root:  # what the node writes inside is its own
            shutil.chown(snapshot_repository, user, user)

    http_port = free_port()
    settings = {**_node_settings(http_port, data, logs, config, secure, snapshot_repository), **(extra_settings or {})}
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        **java_env,
        "ES_PATH_CONF": str(config),
        "ES_JAVA_OPTS": f"-Xms{heap} -Xmx{heap}",
        "ES_TMPDIR": str(base / "tmp"),
    }
    command = [str(home / "bin" / "elasticsearch"), "-p", str(base / PID_FILE)]
    command += [f"-E{k}={v}" for k, v in settings.items()]
    if as_root:
        command = ["runuser", "-u", user, "--", "env", *[f"{k}={v}" for k, v in env.items()], *command]
    memory = _memory_cgroup(memory_limit, as_root)
    cpu = _cpu_cgroup(cpu_limit)
    joined = [cgroup.procs for cgroup in (memory, cpu) if cgroup]
    if joined:  # before exec, so that every page the node touches and all its CPU time are charged to them
        script = " && ".join(f"echo $$ > {shlex.quote(str(procs))}" for procs in joined)
        command = ["sh", "-c", f'{script} && exec "$@"', "sh", *command]
    log_file = base / "stdout.log"
    with open(log_file, "wb") as out, on_cpus(cpus):
        process = subprocess.Popen(
            command, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=base, start_new_session=True
        )
    url = f"https://localhost:{http_port}" if secure else f"http://127.0.0.1:{http_port}"
    cluster = LocalCluster(
        version=version, url=url, base_dir=base, process=process, log_file=log_file,
        username=username, password=password, ca_file=ca_file, memory=memory, cpu=cpu,
        java_home=jdk or home / "jdk", user=user if as_root else None, snapshot_repository=snapshot_repository,
    )
    try:
        cluster.wait_for_health("yellow", timeout)
    except BaseException:
        cluster.stop(keep_files=True)
        raise
    return cluster


def _distribution(version: str, cache: Path | None, home: Path | None, base: Path) -> tuple[Path, Path | None]:
    """The distribution's home under base (the integ-test-zip, or a copy of home) and the JDK to
    run it with (None: its own bundled one)."""
    if home is None:
        home = unpack(distribution_zip(version, cache), base / "dist")
    else:  # a copy: Elasticsearch's launcher runs in its home and writes logs/gc.log there
        home = Path(shutil.copytree(Path(home).resolve(), base / "dist" / Path(home).name, symlinks=True))
    # A full distribution bundles its JDK; the integ-test-zip does not.
    jdk = None if (home / "jdk").is_dir() and not os.environ.get("ES_JAVA_HOME") else java_home(version)
    if rootendpoint.lacks_root_endpoint(home):
        rootendpoint.install(home, jdk or home / "jdk")
    return home, jdk


def _superuser(home: Path, config: Path, java_env: dict[str, str]) -> tuple[str, str]:
    """Certificates from a private CA in config/certs, and a superuser of the file realm with a
    random password: what ECK sets up."""
    _make_certificates(config / "certs")
    username, password = "esbench", secrets.token_urlsafe(18)
    # File realm user, written straight into the config the node will read. The password goes in
    # on stdin (the tool asks for it twice), never on a command line others can read.
    subprocess.run(
        [str(home / "bin" / "elasticsearch-users"), "useradd", username, "-r", "superuser"],
        input=f"{password}\n{password}\n", text=True,
        env={**os.environ, **java_env, "ES_PATH_CONF": str(config)},
        check=True, capture_output=True,
    )
    return username, password


def _hand_over(base: Path, user: str) -> None:
    """Everything under base to the node's system user (root may not run Elasticsearch)."""
    ensure_system_user(user)
    base.chmod(0o755)
    shutil.chown(base, user, user)
    for root, dirs, files in os.walk(base):
        for name in dirs + files:
            shutil.chown(os.path.join(root, name), user, user)


def _node_settings(http_port: int, data: Path, logs: Path, config: Path, secure: bool,
                   snapshot_repository: Path | None) -> dict[str, Any]:
    settings: dict[str, Any] = {
        "discovery.type": "single-node",
        "network.host": "127.0.0.1",
        "http.port": http_port,
        "transport.port": free_port(),
        "path.data": data,
        "path.logs": logs,
        # Set from the very first start: otherwise 8.x rewrites its config for TLS itself.
        "xpack.security.enabled": str(secure).lower(),
        DISK_THRESHOLD: "false",
    }
    if snapshot_repository is not None:
        settings["path.repo"] = snapshot_repository
    if secure:
        settings.update({
            "xpack.security.http.ssl.enabled": "true",
            "xpack.security.http.ssl.key": config / "certs" / "http.key",
            "xpack.security.http.ssl.certificate": config / "certs" / "http.crt",
            "xpack.security.http.ssl.certificate_authorities": config / "certs" / "ca.crt",
        })
    return settings


def _cpu_cgroup(cpus: float | None) -> CpuCgroup | None:
    if cpus is None:
        return None
    cgroup = CpuCgroup.create()
    cgroup.set_limit(cpus)
    return cgroup


def _memory_cgroup(limit_bytes: int | None, as_root: bool) -> MemoryCgroup | None:
    try:
        memory = MemoryCgroup.create() if as_root or limit_bytes is not None else None
    except Unavailable:
        if limit_bytes is not None:
            raise
        return None
    if memory and limit_bytes is not None:
        memory.set_limit(limit_bytes)
    return memory
