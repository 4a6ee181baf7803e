"""`esbench history`: the races this machine made or was given, as series per configuration, and
their change points.

`esbench run` and local sweeps record each measured run here as it ends (LocalStore.remember);
`history add` records result files made elsewhere (`esbench run -o`, a sweep's folder,
`kubectl get esx -o yaml`), `history pull` what the operator recorded in its results store.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from esbench.analysis import changepoints, compare
from esbench.api import models
from esbench.cli import credentials, localsweep, rendering, sources
from esbench.esclient import Client
from esbench.history import records
from esbench.history.esstore import ElasticsearchStore, StoreUnavailable
from esbench.history.localstore import LocalStore, UnknownConfiguration, default_path

if TYPE_CHECKING:
    from esbench.analysis import history_page

DEFAULT_METRIC = "service_time.p50"


@click.group("history")
@click.option("--store", "path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="The history's SQLite file (default: $ESBENCH_HISTORY, else "
                   "$XDG_DATA_HOME/esbench/history.sqlite).")
@click.pass_context
def history_command(ctx: click.Context, path: Path | None) -> None:
    """The results of every run recorded on this machine, as series, and where they changed."""
    ctx.obj = LocalStore(path or default_path())


@history_command.command("add")
@click.argument("inputs", nargs=-1, required=True, metavar="FILE|FOLDER...")
@click.pass_obj
def add_command(store: LocalStore, inputs: tuple[str, ...]) -> None:
    """Record result files: `esbench run -o` output, a local sweep's folder (its runs and the
    sweep), or Experiments and sweeps as `kubectl get esx|esxs [NAME] -o yaml|json` print them.
    Races recorded before are left as they are; failed runs and warm-up runs are not recorded."""
    console = rendering.console()
    tally = _Tally(store, console)
    for argument in inputs:
        path = Path(argument)
        runs = sources.sweep_runs(path)
        sweep = [path / localsweep.SWEEP_FILE] if (path / localsweep.SWEEP_FILE).is_file() else []
        files = [*runs, *sweep] if runs is not None else [path] if path.is_file() else None
        if files is None:
            raise click.ClickException(f"{argument}: no such file, and not a sweep's folder")
        for file in files:
            try:
                documents = sources.documents(file)
            except sources.SourceError as error:
                raise click.ClickException(str(error)) from error
            for document in documents:
                tally.take(document, str(file))
    console.print(f"{tally}; history: {escape(str(store.path))}")


@dataclass
class _Tally:
    """Documents recorded into the history, counted by what became of them."""

    store: LocalStore
    console: Console
    added: int = 0
    known: int = 0
    skipped: int = 0
    sweeps: int = 0

    def take(self, document: dict[str, Any], source: str, race_json: dict[str, Any] | None = None) -> None:
        if document.get("kind") == models.SWEEP_KIND:
            self.store.add_sweep(document)
            self.sweeps += 1
            return
        try:
            record = records.record(document, source, race_json)
        except records.NotRecordable as error:
            self.console.print(f"[dim]skipped: {escape(str(error))}[/]")
            self.skipped += 1
            return
        if self.store.add(record):
            self.added += 1
        else:
            self.known += 1

    def __str__(self) -> str:
        return (f"{self.added} race(s) recorded, {self.known} recorded before, {self.skipped} skipped, "
                f"{self.sweeps} sweep(s)")


@history_command.command("pull")
@click.argument("url")
@click.option("--ca-file", type=click.Path(exists=True, dir_okay=False), default=None,
              help="The CA that signed the store's certificate (default: the system's).")
@click.pass_obj
def pull_command(store: LocalStore, url: str, ca_file: str | None) -> None:
    """Record the races and sweeps of an Elasticsearch results store (the operator's resultsStore)
    in this history, so that `list`, `show` and `check` see them. Credentials: ES_USERNAME, and
    ES_PASSWORD or ES_PASSWORD_FILE. Races recorded before are left as they are."""
    username, password = credentials.from_env()
    remote = ElasticsearchStore(Client(url, username, password, ca_file))
    console = rendering.console()
    tally = _Tally(store, console)
    try:
        for document, race_json in remote.races():
            tally.take(document, url, race_json)
        for sweep in remote.sweeps():
            tally.take(sweep, url)
    except StoreUnavailable as error:
        raise click.ClickException(str(error)) from error
    console.print(f"{tally} from {escape(url)}; history: {escape(str(store.path))}", highlight=False)


@history_command.command("list")
@click.pass_obj
def list_command(store: LocalStore) -> None:
    """The configurations with their races, the most recently run first."""
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    for column in ("configuration", "track", "races", "first", "last", "last experiment"):
        table.add_column(column, justify="right" if column == "races" else "left")
    for found in store.configurations():
        table.add_row(found.id, escape(found.track), str(found.races), found.first, found.last,
                      escape(found.last_experiment))
    rendering.console().print(table)


def _change_text(point: changepoints.ChangePoint, metric: compare.Metric | None) -> str:
    return f"{point.kind(metric)} {changepoints.format_change(point.change_percent)} (mean {point.mean_before:.4g} -> {point.mean_after:.4g}, p {point.pvalue:.2g})"


def _series(store: LocalStore, wanted: list[tuple[str, str]], tasks: tuple[str, ...], python: Path,
            max_pvalue: float, min_magnitude: float) -> list[tuple[str, str, history_page.Series]]:
    """For each (configuration, metric) wanted, the metric's series of each task (default: every
    one that has it) with its change points, found in one call to Otava."""
    from esbench.analysis import history_page  # matplotlib: loaded only by the commands that need it
    found = [(configuration, metric, subject, runs) for configuration, metric in wanted
             for subject in tasks or store.subjects(configuration)
             if (runs := store.series(configuration, subject, metric))]
    points = changepoints.find_each([[r.value for r in runs] for *_, runs in found], python, max_pvalue=max_pvalue,
                                    min_magnitude=min_magnitude)
    return [(configuration, metric, history_page.Series(subject, runs[0].unit, runs, changes))
            for (configuration, metric, subject, runs), changes in zip(found, points, strict=True)]


def _write_page(store: LocalStore, configuration: str, metric: str, found: list[history_page.Series],
                max_pvalue: float, path: Path) -> None:
    from esbench.analysis import history_page

    path.write_text(history_page.to_html(configuration, metric, found, store.latest_spec(configuration), max_pvalue))


def pages_for(entries: list[compare.Entry], report: Path) -> list[tuple[str, Path]]:
    """The history page of each configuration of these runs that the local history holds more than
    one race of (written beside the report as REPORT.history-CONFIGURATION.html): (label, path)."""
    store = LocalStore(default_path())
    try:
        recorded = store.configurations_of([entry.results.race_id for entry in entries if entry.results.race_id])
        python = changepoints.otava_python()
    except changepoints.OtavaMissing as error:
        rendering.console().print(f"no history pages: {escape(str(error))}", highlight=False)
        return []
    except (sqlite3.Error, OSError):  # no history on this machine
        return []
    pages = []
    for configuration in dict.fromkeys(recorded.values()):
        races = store.races_of(configuration)
        found = [series for *_, series in _series(store, [(configuration, DEFAULT_METRIC)], (), python,
                                                  changepoints.MAX_PVALUE, 0.0)] if races > 1 else []
        if not found:  # one race is no history yet
            continue
        runs = [entry.label for entry in entries if recorded.get(entry.results.race_id) == configuration]
        path = report.with_name(f"{report.stem}.history-{configuration}.html")
        _write_page(store, configuration, DEFAULT_METRIC, found, changepoints.MAX_PVALUE, path)
        pages.append((f"{configuration}: {races} races ({', '.join(runs)} of this report)", path))
    return pages


_max_pvalue = click.option("--max-pvalue", type=float, default=changepoints.MAX_PVALUE, show_default=True,
                           help="A change point's t-test must reach this.")
_min_magnitude = click.option("--min-magnitude", type=float, default=0.0, show_default=True,
                              help="A change point must also change the mean by this fraction (0.05: 5 %).")


@history_command.command("show")
@click.argument("configuration")
@click.option("--task", "tasks", multiple=True, help="A task (or cluster, nodes); default: every one with the metric.")
@click.option("--metric", default=DEFAULT_METRIC, show_default=True,
              help="A metric key as `esbench compare --format csv` names it.")
@_max_pvalue
@_min_magnitude
@click.option("--format", "format_", type=click.Choice(["table", "json"]), default="table", show_default=True)
@click.option("--html", "html_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the history page here instead: a chart of each series, its change points, every run.")
@click.pass_obj
def show_command(store: LocalStore, configuration: str, tasks: tuple[str, ...], metric: str, max_pvalue: float,
                 min_magnitude: float, format_: str, html_path: Path | None) -> None:
    """One metric of a CONFIGURATION (an id from `history list`, or its first characters) over its
    races, and its change points: Apache Otava's E-divisive means with a t-test (scripts/otava-env.sh)."""
    try:
        configuration = store.resolve(configuration)
        python = changepoints.otava_python()
    except (UnknownConfiguration, changepoints.OtavaMissing) as error:
        raise click.ClickException(str(error)) from error
    known = compare.metric_named(metric)
    found = [series for *_, series in _series(store, [(configuration, metric)], tasks, python, max_pvalue,
                                              min_magnitude)]
    if not found:
        raise click.ClickException(f"no {metric} for {', '.join(tasks) or 'any task'} in configuration {configuration}")
    if html_path:
        _write_page(store, configuration, metric, found, max_pvalue, html_path)
        click.echo(f"history page: {html_path}")
    elif format_ == "json":
        click.echo(json.dumps({"configuration": configuration, "metric": metric, "series": [
            {"subject": s.subject,
             "points": [{"raceId": r.race_id, "raceTimestamp": r.race_timestamp, "experiment": r.experiment,
                         "value": r.value, "unit": r.unit} for r in s.runs],
             "changePoints": [{"index": c.index, "raceId": s.runs[c.index].race_id, "kind": c.kind(known),
                               "meanBefore": c.mean_before, "meanAfter": c.mean_after,
                               "changePercent": c.change_percent, "pvalue": c.pvalue} for c in s.change_points]}
            for s in found]}, indent=2))
    else:
        _print_series(found, metric, configuration)


def _print_series(found: list[history_page.Series], metric: str, configuration: str) -> None:
    console, known = rendering.console(), compare.metric_named(metric)
    for series in found:
        at = {c.index: c for c in series.change_points}
        table = Table(title=escape(f"{series.subject}: {metric}, configuration {configuration}"), title_justify="left",
                      box=box.SIMPLE_HEAD, pad_edge=False)
        for column in ("#", "race started", "experiment", "value", "change point"):
            table.add_column(column, justify="right" if column in ("#", "value") else "left")
        for index, run in enumerate(series.runs):
            table.add_row(str(index), run.race_timestamp, escape(run.experiment),
                          compare.format_value(run.value, series.unit),
                          _change_text(at[index], known) if index in at else "",
                          style="bold" if index in at else None)
        console.print(table)


EXIT_SUSPECTED = 3
EXIT_REGRESSION = 4


@history_command.command("check")
@click.argument("configurations", nargs=-1, metavar="[CONFIGURATION...]")
@click.option("--metric", "metrics", multiple=True, default=changepoints.WATCHED_METRICS, show_default=True,
              help="Metrics to watch (repeat it for several).")
@_max_pvalue
@_min_magnitude
@click.option("--format", "format_", type=click.Choice(["table", "json", "prometheus"]), default="table",
              show_default=True, help="prometheus: a gauge per series for node_exporter's textfile collector.")
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path), help="Write here, not to stdout.")
@click.pass_obj
def check_command(store: LocalStore, configurations: tuple[str, ...], metrics: tuple[str, ...], max_pvalue: float,
                  min_magnitude: float, format_: str, output: Path | None) -> None:
    """Look for a regression at the end of each series of the CONFIGURATIONs (default: all): the
    series' newest change point, if it makes the metric worse. With fewer than two runs after it,
    it is suspected (one bad run looks like it): run the configuration again. With two or more it
    is confirmed, and reported once (the history remembers it).

    Exit status: 0 nothing new, 3 a regression suspected (run again to confirm), 4 a regression
    confirmed and reported now."""
    try:
        wanted = [store.resolve(c) for c in configurations] or [c.id for c in store.configurations()]
        python = changepoints.otava_python()
    except (UnknownConfiguration, changepoints.OtavaMissing) as error:
        raise click.ClickException(str(error)) from error
    checked = []
    every = [(configuration, metric) for configuration in wanted for metric in metrics]
    for configuration, metric, series in _series(store, every, (), python, max_pvalue, min_magnitude):
        found = changepoints.newest_regression(series.change_points, len(series.runs), compare.metric_named(metric))
        first = series.runs[found.point.index].race_id if found else None
        new = bool(found and found.confirmed and store.report_regression(configuration, series.subject, metric, first))
        checked.append({"configuration": configuration, "subject": series.subject, "metric": metric,
                        "runs": len(series.runs),
                        "state": "steady" if found is None else "confirmed" if found.confirmed else "suspected",
                        "reportedNow": new, "firstRaceAfter": first,
                        "changePercent": found.point.change_percent if found else None,
                        "pvalue": found.point.pvalue if found else None})
    text = _check_text(checked, format_)
    if output:
        partial = output.with_name(output.name + ".partial")
        partial.write_text(text)
        partial.replace(output)  # whole: a collector never reads half a file
    else:
        click.echo(text, nl=False)
    if any(c["reportedNow"] for c in checked):
        click.get_current_context().exit(EXIT_REGRESSION)
    if any(c["state"] == "suspected" for c in checked):
        click.get_current_context().exit(EXIT_SUSPECTED)


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


def _check_text(checked: list[dict], format_: str) -> str:
    if format_ == "json":
        return json.dumps(checked, indent=2) + "\n"
    if format_ == "prometheus":
        lines = [f"# HELP {changepoints.REGRESSION_GAUGE} The newest change point of a history series: 0 none or not a "
                 "regression, 1 a regression suspected, 2 a regression confirmed.",
                 f"# TYPE {changepoints.REGRESSION_GAUGE} gauge"]
        lines += [f'{changepoints.REGRESSION_GAUGE}{{configuration="{c["configuration"]}",task="{_label(c["subject"])}",'
                  f'metric="{_label(c["metric"])}"}} {changepoints.REGRESSION_GAUGE_VALUES[c["state"]]}'
                  for c in checked]
        return "\n".join(lines) + "\n"
    interesting = [c for c in checked if c["state"] != "steady"]
    lines = [f"{len(checked)} series checked, {len(interesting)} with a regression at its end"]
    for c in interesting:
        what = ("confirmed, reported now" if c["reportedNow"] else "confirmed, reported before"
                if c["state"] == "confirmed" else "suspected: run the configuration again to confirm")
        lines.append(f"{c['configuration'][:8]} {c['subject']} {c['metric']}: "
                     f"{changepoints.format_change(c['changePercent'])} from race "
                     f"{c['firstRaceAfter']} (p {c['pvalue']:.2g}), {what}")
    return "\n".join(lines) + "\n"
