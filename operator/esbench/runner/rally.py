"""From an Experiment spec to Rally's inputs: track params, client options and the command line.

Pure functions only (no I/O): the runner writes what these return and starts the process.
Rally's own vocabulary is kept: track, challenge, track params, race.
"""

from __future__ import annotations

import copy
import re
from typing import Any
from urllib.parse import urlsplit

from esbench.api import models
from esbench.api.reasons import Reason

# Name under which a Git track repository is declared in rally.ini ([tracks] <name>.url).
GIT_REPOSITORY_NAME = "esbench"
DEFAULT_TRACKS_URL = "https://github.com/elastic/rally-tracks"
# Rally's own default request timeout; bulk/force-merge tasks set their own where needed.
CLIENT_TIMEOUT_SECONDS = 60


def _setting_key(key: str) -> str:
    # Elasticsearch accepts "refresh_interval" and "index.refresh_interval" alike; one spelling
    # keeps a key from appearing twice with different values.
    return key if key == "index" or key.startswith("index.") else f"index.{key}"


def index_settings(index: models.Index) -> dict[str, Any]:
    """The `index_settings` track param for spec.index: only what the spec sets.

    The explicit fields (codec, refreshInterval) win over the same keys in the free map.
    """
    settings = {_setting_key(k): v for k, v in (index.settings or {}).items()}
    if index.codec is not None:
        settings["index.codec"] = index.codec.value
    if index.refresh_interval is not None:
        settings["index.refresh_interval"] = index.refresh_interval
    return settings


def effective_replicas(params: dict[str, Any]) -> int:
    """Replicas the track will create: index_settings win over number_of_replicas (Rally merges
    index_settings over the index body); rally-tracks default to 0."""
    settings = params.get("index_settings") or {}
    for key in ("index.number_of_replicas", "number_of_replicas"):
        if key in settings:
            return int(settings[key])
    return int(params.get("number_of_replicas", 0))


def track_params(spec: models.ExperimentSpec, data_nodes: int) -> dict[str, Any]:
    """Track params for Rally: the user's trackParams merged with workload.load and spec.index.

    Follows rally-tracks conventions so that the same spec works on bundled and standard tracks:
    number_of_shards, number_of_replicas, index_settings (which REPLACES a challenge's default
    index settings, hence only what the spec sets) and cluster_health.
    """
    params = copy.deepcopy(spec.workload.track_params or {})
    if spec.workload.load:
        params.update(spec.workload.load.track_params())
    index = spec.index
    if index.shards is not None:
        params["number_of_shards"] = index.shards
    if index.replicas is not None:
        params["number_of_replicas"] = index.replicas
    settings = index_settings(index)
    if settings:
        # Merge, not replace: dropping the user's own index_settings silently would surprise.
        params["index_settings"] = {**(params.get("index_settings") or {}), **settings}
    # Tracks wait for `cluster_health` (default green) and retry until it is reached. A replica
    # can never be assigned to the node holding its primary, so with replicas >= data nodes the
    # index stays yellow forever and the race would hang: ask for yellow instead.
    if effective_replicas(params) >= data_nodes and params.get("cluster_health", "green") == "green":
        params["cluster_health"] = "yellow"
    return params


# A new index (not a data stream) prefers the content tier: only nodes with one of these roles
# can hold its shards (data_hot, data_warm, ... alone cannot).
NEW_INDEX_ROLES = ("data", "data_content")


def data_node_count(spec: models.Elasticsearch) -> int:
    """Nodes the spec asks for that can hold a new index (when the live cluster cannot be asked)."""
    if spec.node_sets:
        return sum(
            ns.count for ns in spec.node_sets if ns.roles is None or any(r in NEW_INDEX_ROLES for r in ns.roles)
        ) or 1
    return spec.node_count or 1


def target_host(target_url: str) -> tuple[str, bool]:
    """`host:port` for --target-hosts and whether the target speaks TLS."""
    parts = urlsplit(target_url if "://" in target_url else f"http://{target_url}")
    use_ssl = parts.scheme == "https"
    port = parts.port or (443 if use_ssl else 9200)
    # An IPv6 address keeps its brackets: Rally reads host:port as the netloc of a URL.
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"{host}:{port}", use_ssl


def client_options(
    *, use_ssl: bool, ca_file: str | None = None, username: str | None = None, password: str | None = None
) -> dict[str, Any]:
    """Rally's --client-options as JSON (`{"default": {...}}`).

    Rally reads --client-options from a file when the value ends in .json
    (esrally.utils.opts.to_dict), so the password travels in a 0600 file, never on a command
    line; Rally masks basic_auth_password in its own log.
    """
    options: dict[str, Any] = {"timeout": CLIENT_TIMEOUT_SECONDS}
    if use_ssl:
        options["use_ssl"] = True
        options["verify_certs"] = True
        if ca_file:
            options["ca_certs"] = ca_file
    if username and password:
        options["basic_auth_user"] = username
        options["basic_auth_password"] = password
    return {"default": options}


def rally_ini(git_url: str) -> str:
    """A rally.ini (esrally 2.13, config version 17) that also knows the Git track repository.

    Rally creates this file itself on first start; it is written beforehand only for a Git
    source because --track-repository names a repository declared here, not a URL.
    """
    return f"""[meta]
config.version = 17

[system]
env.name = local

[node]
root.dir = ${{CONFIG_DIR}}/benchmarks
src.root.dir = ${{CONFIG_DIR}}/benchmarks/src

[source]
remote.repo.url = https://github.com/elastic/elasticsearch.git
elasticsearch.src.subdir = elasticsearch

[benchmarks]
local.dataset.cache = ${{CONFIG_DIR}}/benchmarks/data

[reporting]
datastore.type = in-memory
datastore.host =
datastore.port =
datastore.secure = False
datastore.user =
datastore.password =

[tracks]
default.url = {DEFAULT_TRACKS_URL}
{GIT_REPOSITORY_NAME}.url = {git_url}

[teams]
default.url = https://github.com/elastic/rally-teams

[defaults]
preserve_benchmark_candidate = false

[distributions]
release.cache = true
"""


_ANSI = re.compile(r"\x1b\[[0-9;]*m")

# Rally's messages for problems with the track itself (name, challenge, params, syntax, tasks).
_TRACK_ERRORS = re.compile(
    r"TrackConfigError|TrackSyntaxError|InvalidSyntax|InvalidName|Unused track parameters|"
    r"Reserved track parameters|Unknown challenge|Track \S+ does not exist|Could not find track|"
    r"Invalid format for filtered tasks|jinja2\.exceptions|Could not (?:clone|fetch|checkout)"
)
_UNREACHABLE = re.compile(r"REST API layer is not available|Could not connect to|Connection refused")


def why_failed(output: str, status: int | None) -> str:
    """Why esrally failed: its own error, else its exit status."""
    return rally_error(output) or f"esrally exited with status {status}"


def rally_error(output: str) -> str | None:
    """Rally's own error message from its console output: the `[ERROR] Cannot race.` block, or
    the last line of the traceback inside it (the exception and its message)."""
    lines = [_ANSI.sub("", line).rstrip() for line in output.splitlines()]
    for start, line in enumerate(lines):
        if "[ERROR]" in line:
            block = []
            for following in lines[start:]:
                if not following.strip():
                    break
                block.append(following)
            if any("Traceback (most recent call last)" in b for b in block):
                return block[-1].strip()
            return " ".join(b.strip() for b in block).replace("[ERROR] ", "", 1)
    return None


def failure_kind(output: str) -> Reason:
    """Which kind of failure a failed esrally run was, from what it printed."""
    text = _ANSI.sub("", output)
    if _TRACK_ERRORS.search(text):
        return Reason.TRACK_ERROR
    if _UNREACHABLE.search(text):
        return Reason.TARGET_UNREACHABLE
    return Reason.RACE_FAILED


def race_command(
    spec: models.ExperimentSpec,
    *,
    esrally: list[str],
    race_id: str,
    target_hosts: str,
    params_file: str,
    client_options_file: str,
    track_path: str | None = None,
    report_file: str | None = None,
) -> list[str]:
    """The esrally command line. Secrets never appear here: they are in client_options_file.

    esrally is how to start it (esrallyprocess.esrally_argv); track_path is the prepared copy of a bundled
    track (run offline: nothing to download).
    """
    workload = spec.workload
    command = [*esrally, "race", "--pipeline=benchmark-only", f"--race-id={race_id}"]
    if workload.source == models.TrackSource.BUNDLED:
        if track_path is None:
            raise ValueError("a bundled track needs its prepared track_path")
        command += [f"--track-path={track_path}", "--offline"]
    else:
        command.append(f"--track={workload.track}")
        if workload.source == models.TrackSource.GIT:
            command.append(f"--track-repository={GIT_REPOSITORY_NAME}")
        if workload.repository is not None and workload.repository.revision:
            command.append(f"--track-revision={workload.repository.revision}")
    if workload.challenge:
        command.append(f"--challenge={workload.challenge}")
    command += [f"--track-params={params_file}", f"--on-error={workload.on_error.value}"]
    if workload.include_tasks:
        command.append(f"--include-tasks={','.join(workload.include_tasks)}")
    if workload.exclude_tasks:
        command.append(f"--exclude-tasks={','.join(workload.exclude_tasks)}")
    if workload.test_mode:
        command.append("--test-mode")
    command += [f"--target-hosts={target_hosts}", f"--client-options={client_options_file}"]
    if report_file:
        command.append(f"--report-file={report_file}")
    # The CRD admits only options that esbench does not set (an allowlist), so none overrides ours.
    command += list(spec.rally.extra_args or [])
    return command
