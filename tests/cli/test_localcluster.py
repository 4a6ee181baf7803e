"""How a local node gets its JDK and its `GET /` (pure: fake JDK folders and jars; the real
ones are used by every runner test, and 9.2.4 with Java 25 by tests/runner/test_studies.py)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from esbench.localnode import localcluster, rootendpoint


def fake_jdk(folder: Path, version: str) -> Path:
    (folder / "bin").mkdir(parents=True)
    (folder / "bin" / "java").touch(mode=0o755)
    (folder / "release").write_text(f'IMPLEMENTOR="test"\nJAVA_VERSION="{version}"\n')
    return folder


@pytest.fixture
def jdks(tmp_path, monkeypatch):
    jvm = tmp_path / "jvm"
    found = {name: fake_jdk(jvm / name, version)
             for name, version in (("openjdk-17", "17.0.15"), ("temurin-25", "25.0.3"), ("openjdk-21", "21.0.2"))}
    monkeypatch.setattr(localcluster, "JVM_DIR", jvm)
    monkeypatch.delenv("ES_JAVA_HOME", raising=False)
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(found["openjdk-17"] / "bin"))
    return found


def test_the_jdk_on_path_runs_what_it_can_and_the_newest_installed_one_the_rest(jdks):
    assert localcluster.java_home("8.7.1") == jdks["openjdk-17"]
    assert localcluster.java_home("7.17.29") == jdks["openjdk-17"]
    assert localcluster.java_home("9.2.4") == jdks["temurin-25"]


def test_a_jdk_named_by_the_user_is_used_or_refused_never_replaced(jdks, monkeypatch):
    monkeypatch.setenv("ES_JAVA_HOME", str(jdks["openjdk-21"]))
    assert localcluster.java_home("9.2.4") == jdks["openjdk-21"]
    monkeypatch.setenv("ES_JAVA_HOME", str(jdks["openjdk-17"]))
    with pytest.raises(RuntimeError, match="Elasticsearch 9.2.4 needs Java 21 or newer; ES_JAVA_HOME=.* is Java 17"):
        localcluster.java_home("9.2.4")


def test_no_jdk_new_enough_is_an_error_that_says_what_to_set(jdks, monkeypatch):
    monkeypatch.setattr(localcluster, "JVM_DIR", jdks["openjdk-17"].parent / "none")
    with pytest.raises(RuntimeError, match="needs a JDK 21 or newer: none on PATH .*set ES_JAVA_HOME"):
        localcluster.java_home("9.0.0")


def distribution(tmp_path: Path, version: str, classes: list[str]) -> Path:
    home = tmp_path / f"elasticsearch-{version}"
    (home / "lib").mkdir(parents=True)
    with zipfile.ZipFile(home / "lib" / f"elasticsearch-{version}.jar", "w") as jar:
        for name in classes:
            jar.writestr(name, b"")
    with zipfile.ZipFile(home / "lib" / f"elasticsearch-x-content-{version}.jar", "w") as jar:
        jar.writestr(rootendpoint.SERVER_HANDLER, b"")  # another jar's classes do not count
    return home


def test_get_root_is_added_only_where_the_server_lacks_it(tmp_path):
    assert not rootendpoint.lacks_root_endpoint(distribution(tmp_path, "8.7.1", [rootendpoint.SERVER_HANDLER]))
    assert rootendpoint.lacks_root_endpoint(distribution(tmp_path, "9.2.4", ["org/elasticsearch/Build.class"]))


def test_a_jre_cannot_build_the_module_and_says_so(tmp_path):
    home = distribution(tmp_path, "9.2.4", [])
    jre = fake_jdk(tmp_path / "jre-25", "25.0.3")
    with pytest.raises(RuntimeError, match="lacks `GET /`.* has no javac: use a JDK"):
        rootendpoint.install(home, jre)
