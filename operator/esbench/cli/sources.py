"""Where compare and report get their Experiments: result files or the current kube context.

An argument that names an existing file is read as a file: an Experiment document (JSON or
YAML, as `esbench run --output` writes it or `kubectl get esx NAME -o json|yaml` prints it), a
list of them (`kubectl get esx -o json`), or Rally's own race.json. Any other argument is the
name of an Experiment in the current kube context's namespace (or --namespace).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

from esbench.analysis.compare import Entry, NotComparable, entry_from_document, unique_labels
from esbench.api import models
from esbench.cli.localsweep import RUNS, SWEEP_FILE
from esbench.runner import results


class SourceError(Exception):
    """An argument that names neither a readable result file nor an Experiment with results."""


def documents(path: Path) -> list[dict[str, Any]]:
    """The documents of a JSON or YAML file, a List's items in its place."""
    try:
        text = path.read_text()
        try:
            loaded = [json.loads(text)]  # most result files; many times faster than reading them as YAML
        except ValueError:
            loaded = list(yaml.safe_load_all(text))  # YAML is a superset of JSON
    except (OSError, yaml.YAMLError) as error:
        raise SourceError(f"{path}: cannot read: {error}") from error
    found = []
    for document in loaded:
        if isinstance(document, dict) and isinstance(document.get("items"), list):  # a List
            found += [d for d in document["items"] if isinstance(d, dict)]
        elif isinstance(document, dict):
            found.append(document)
    return found


def _from_race_json(race: dict[str, Any], path: Path) -> Entry:
    if not race.get("results"):
        raise SourceError(f"{path}: race.json without results (the race failed)")
    summary = results.summarize(race)
    return Entry(label=race.get("race-id") or path.stem, results=summary, phase=None,
                 cluster_version=summary.distribution_version, source=str(path))


def from_file(path: Path) -> list[Entry]:
    entries = _entries(documents(path), path)
    if not entries:
        raise SourceError(f"{path}: holds no Experiment")
    return entries


def _entries(documents: list[dict[str, Any]], path: Path) -> list[Entry]:
    entries = []
    for document in documents:
        if "rally-version" in document and "kind" not in document:
            entries.append(_from_race_json(document, path))
            continue
        try:
            entries.append(entry_from_document(document, str(path)))
        except NotComparable as error:
            raise SourceError(str(error)) from error
        except ValueError as error:  # pydantic: results in an unexpected shape
            raise SourceError(f"{path}: status.results is not esbench's results format: {error}") from error
    return entries


def _from_api(plural: str, kind: str, name: str, namespace: str | None, context: str | None) -> tuple[dict, str]:
    """The resource and its namespace/name, from the current (or given) kube context."""
    from kubernetes import client, config
    from kubernetes.client.exceptions import ApiException
    from kubernetes.config.config_exception import ConfigException

    try:
        config.load_kube_config(context=context)
        if namespace is None:
            _, active = config.list_kube_config_contexts()
            namespace = (active or {}).get("context", {}).get("namespace") or "default"
    except (ConfigException, OSError) as error:
        raise SourceError(f"{name}: not a file, and no kube context to look it up in ({error})") from error
    custom = client.CustomObjectsApi()
    try:
        return custom.get_namespaced_custom_object(models.GROUP, models.VERSION, namespace, plural, name), f"{namespace}/{name}"
    except ApiException as error:
        if error.status == 404:
            raise SourceError(f"{name}: no such file, and no {kind} {name} in namespace {namespace}") from error
        raise SourceError(f"{name}: reading {kind} {namespace}/{name} failed: {error.status} {error.reason}") from error
    except OSError as error:  # urllib3 connection errors are OSErrors
        raise SourceError(f"{name}: not a file, and the API server is not reachable ({error})") from error


def from_cluster(name: str, namespace: str | None, context: str | None = None) -> Entry:
    document, where = _from_api(models.PLURAL, models.KIND, name, namespace, context)
    try:
        return entry_from_document(document, where)
    except NotComparable as error:
        raise SourceError(str(error)) from error


def sweep(argument: str, namespace: str | None = None, context: str | None = None) -> dict[str, Any]:
    """An ExperimentSweep: from a file (`kubectl get esxs NAME -o yaml`), the folder `esbench run
    SWEEP.yaml` writes, or by name."""
    path = Path(argument)
    if path.is_dir() and (path / SWEEP_FILE).is_file():
        path = path / SWEEP_FILE
    if path.is_file():
        found = [d for d in documents(path) if d.get("kind") == models.SWEEP_KIND]
        if not found:
            raise SourceError(f"{path}: holds no {models.SWEEP_KIND}")
        return found[0]
    return _from_api(models.SWEEP_PLURAL, models.SWEEP_KIND, argument, namespace, context)[0]


def sweep_runs(path: Path) -> list[Path] | None:
    """The run files of a local sweep's folder (`esbench run SWEEP.yaml -o FOLDER`), by cell, round
    and attempt (r2 before r10); None if path is not one."""
    if not (path.is_dir() and (path / RUNS).is_dir()):
        return None
    return sorted((path / RUNS).glob("*.json"), key=lambda file: [int(part) if part.isdigit() else part
                                                                   for part in re.split(r"(\d+)", file.name)])


def sweep_of_folder(argument: str) -> dict[str, Any] | None:
    """The ExperimentSweep, with its status, of a local sweep's folder; None if argument is not one."""
    path = Path(argument)
    return sweep(argument) if sweep_runs(path) is not None and (path / SWEEP_FILE).is_file() else None


def _not_a_source(path: Path) -> str:
    """What a folder that is no sweep's folder is not, and what would be read in its place."""
    found = {suffix: len(list(path.glob(f"*.{suffix}"))) for suffix in ("json", "yaml", "yml")}
    if path.name == RUNS and sweep_runs(path.parent) is not None:
        hint = f"; it is a sweep's runs: give the sweep's folder, {path.parent}"
    elif any(found.values()):
        suffix = next(suffix for suffix, count in found.items() if count)
        hint = f"; to read the {sum(found.values())} file(s) in it, give them: {path / f'*.{suffix}'}"
    else:
        hint = ""
    return (f"{path}: a folder, not a sweep's (one with {SWEEP_FILE} and {RUNS}/, as `esbench run SWEEP.yaml` "
            f"writes it). Give result files (JSON or YAML), a sweep's folder, or Experiment names{hint}")


def load(arguments: list[str], namespace: str | None = None, context: str | None = None) -> list[Entry]:
    """Entries for the arguments, in order, with unique labels."""
    entries: list[Entry] = []
    for argument in arguments:
        path = Path(argument)
        runs = sweep_runs(path)
        if runs is not None:  # a local sweep's folder: its runs with results
            for run in runs:
                entries += _entries([d for d in documents(run) if (d.get("status") or {}).get("results")], run)
        elif path.is_file():
            entries += from_file(path)
        elif path.is_dir():
            raise SourceError(_not_a_source(path))
        elif path.suffix.lower() in (".json", ".yaml", ".yml") or "/" in argument:
            raise SourceError(f"{argument}: no such file")
        else:
            entries.append(from_cluster(argument, namespace, context))
    return unique_labels(entries)
