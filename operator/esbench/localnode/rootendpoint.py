"""`GET /` for the minimal distributions that lack it.

From 8.19 on, the integ-test-zip leaves out the rest-root module that answers `GET /`; Rally
reads the cluster's version from it (and fails without it), ECK the cluster's UUID. This adds a
small module of ours (root_endpoint_module/: the same answer, built from the node's own Build
and cluster state), compiled with the JDK's javac against the distribution's own jars.

Standard library only: scripts/images/elasticsearch.sh runs it with the system Python,
`python3 -m esbench.localnode.rootendpoint ES_HOME JAVA_HOME`, to put the same module into the
offline Elasticsearch images.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

SOURCES = Path(__file__).parent / "root_endpoint_module"
MODULE = "esbench-root-endpoint"
# Where 7.x to 8.18 keep the handler: in the server itself.
SERVER_HANDLER = "org/elasticsearch/rest/action/RestMainAction.class"


def lacks_root_endpoint(home: Path) -> bool:
    (server_jar,) = [jar for jar in home.glob("lib/elasticsearch-*.jar") if jar.name[len("elasticsearch-")].isdigit()]
    with zipfile.ZipFile(server_jar) as jar:
        return SERVER_HANDLER not in jar.namelist()


def install(home: Path, java_home: Path) -> None:
    """Compile the module against HOME's jars with JAVA_HOME's javac and add it to HOME/modules."""
    version = home.name.removeprefix("elasticsearch-")
    javac = java_home / "bin" / "javac"
    if not javac.exists():
        raise RuntimeError(f"Elasticsearch {version} lacks `GET /`, which Rally needs; esbench compiles a module "
                           f"that answers it, but {java_home} has no javac: use a JDK (not a JRE) as ES_JAVA_HOME")
    module = home / "modules" / MODULE
    module.mkdir()
    with tempfile.TemporaryDirectory() as classes:
        # Compiled for the JDK that runs the node: the distribution's jars may need a newer one than 17.
        _run(javac, "-nowarn", "-cp", home / "lib" / "*", "-d", classes, *sorted(SOURCES.glob("*.java")))
        _run(java_home / "bin" / "jar", "--create", "--file", module / f"{MODULE}.jar", "-C", classes, ".")
    java_version = java_feature_version(java_home)
    (module / "plugin-descriptor.properties").write_text(
        "description=GET / as the default distribution answers it (added by esbench)\n"
        f"version={version}\nname={MODULE}\nclassname=io.esbench.rootendpoint.RootEndpointPlugin\n"
        f"java.version={java_version}\nelasticsearch.version={version}\n")


def java_feature_version(java_home: Path) -> int:
    """17 for 17.0.15, from the JDK's release file."""
    for line in (java_home / "release").read_text().splitlines():
        if line.startswith("JAVA_VERSION="):
            return int(line.split("=", 1)[1].strip('"').split(".")[0])
    raise RuntimeError(f"{java_home}/release names no JAVA_VERSION")


def _run(*command) -> None:
    done = subprocess.run(list(map(str, command)), capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"{Path(command[0]).name} failed building {MODULE}:\n{done.stdout}{done.stderr}")


if __name__ == "__main__":
    es_home, jdk = map(Path, sys.argv[1:3])
    if lacks_root_endpoint(es_home):
        install(es_home, jdk)
