"""The history without a server: one SQLite file in the user's data directory, for `esbench run`,
local sweeps and `esbench history add`.

A race is recorded once (its race id is the key), whole (its document and every point in one
transaction), so recording the same result file twice, or a sweep folder after some of its
runs, adds only what is new. A sweep is recorded by its uid, its latest status replacing the
one before.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from esbench.api import models
from esbench.history import records
from esbench.history.records import Record, SeriesPoint

SCHEMA_VERSION = 1
SCHEMA = """
CREATE TABLE races (
    race_id TEXT PRIMARY KEY,
    race_timestamp TEXT NOT NULL,
    recorded_at TEXT NOT NULL,
    configuration TEXT NOT NULL,
    experiment TEXT NOT NULL,
    track TEXT NOT NULL,
    sweep TEXT,
    cell TEXT,
    repetition INTEGER,
    document TEXT NOT NULL,
    race_json TEXT
);
CREATE INDEX races_by_configuration ON races (configuration, race_timestamp);
CREATE TABLE points (
    race_id TEXT NOT NULL REFERENCES races (race_id),
    subject TEXT NOT NULL,
    metric TEXT NOT NULL,
    value REAL NOT NULL,
    unit TEXT,
    PRIMARY KEY (race_id, subject, metric)
);
CREATE TABLE regressions (
    configuration TEXT NOT NULL,
    subject TEXT NOT NULL,
    metric TEXT NOT NULL,
    race_id TEXT NOT NULL,
    reported_at TEXT NOT NULL,
    PRIMARY KEY (configuration, subject, metric, race_id)
);
CREATE TABLE sweeps (
    uid TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    recorded_at TEXT NOT NULL,
    document TEXT NOT NULL
);
"""


def default_path() -> Path:
    """$ESBENCH_HISTORY, else esbench/history.sqlite in the XDG data directory."""
    if os.environ.get("ESBENCH_HISTORY"):
        return Path(os.environ["ESBENCH_HISTORY"])
    data = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(data) / "esbench" / "history.sqlite"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class UnknownConfiguration(LookupError):
    """No configuration, or more than one, starts with what was asked for."""


@dataclass(frozen=True)
class Configuration:
    id: str
    track: str
    races: int
    first: str  # race timestamps
    last: str
    last_experiment: str




class LocalStore:
    def __init__(self, path: Path) -> None:
        self.path = path

    @contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with closing(sqlite3.connect(self.path, timeout=30)) as connection:
            connection.execute("PRAGMA foreign_keys = ON")
            version = connection.execute("PRAGMA user_version").fetchone()[0]
            if version == 0:
                with connection:
                    connection.executescript(SCHEMA + f"PRAGMA user_version = {SCHEMA_VERSION};")
            elif version != SCHEMA_VERSION:
                raise RuntimeError(f"{self.path}: history schema {version}, this esbench reads {SCHEMA_VERSION}")
            yield connection

    def add(self, record: Record) -> bool:
        """Records the race; False when it was recorded before."""
        with self._connection() as connection, connection:
            inserted = connection.execute(
                "INSERT OR IGNORE INTO races VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (record.race_id, record.race_timestamp, _now(), record.configuration, record.experiment,
                 record.track, record.sweep, record.cell, record.repetition, json.dumps(record.document),
                 json.dumps(record.race_json) if record.race_json is not None else None),
            ).rowcount
            if inserted:
                connection.executemany(
                    "INSERT INTO points VALUES (?, ?, ?, ?, ?)",
                    [(record.race_id, p.subject, p.metric, p.value, p.unit) for p in record.points],
                )
            return bool(inserted)

    def remember(self, document: dict[str, Any], race_json: dict[str, Any] | None = None) -> str | None:
        """Records a run as it ends, or a sweep as it stands; what happened, for the user, or None
        when there is nothing to say. A store that cannot be written fails no run: the run's file
        holds its results for `esbench history add`."""
        try:
            if document.get("kind") == models.SWEEP_KIND:
                self.add_sweep(document)
                return f"sweep recorded in the history {self.path}"
            record = records.record(document, race_json=race_json)
            self.add(record)
        except records.NotRecordable:
            return None  # a failed run or a warm-up: no figures to keep
        except (sqlite3.Error, OSError, RuntimeError) as error:
            return f"not recorded in the history {self.path}: {error}"
        return f"recorded in the history: configuration {record.configuration[:8]}"

    def add_sweep(self, document: dict[str, Any]) -> None:
        """Records a sweep (its status: progress, comparison, gates) in place of what was recorded
        of it before: a sweep's status grows as its runs end."""
        metadata = document.get("metadata") or {}
        name = metadata.get("name") or "sweep"
        with self._connection() as connection, connection:
            connection.execute("INSERT OR REPLACE INTO sweeps VALUES (?, ?, ?, ?)",
                               (metadata.get("uid") or name, name, _now(), json.dumps(document)))

    def sweeps(self) -> list[dict[str, Any]]:
        with self._connection() as connection:
            return [json.loads(row[0]) for row in connection.execute("SELECT document FROM sweeps ORDER BY name")]

    def report_regression(self, configuration: str, subject: str, metric: str, race_id: str) -> bool:
        """Notes a confirmed regression (its series, and the first race after the change) as
        reported; False when it was reported before, so that it is reported once."""
        with self._connection() as connection, connection:
            return bool(connection.execute("INSERT OR IGNORE INTO regressions VALUES (?, ?, ?, ?, ?)",
                                           (configuration, subject, metric, race_id, _now())).rowcount)

    def configurations(self) -> list[Configuration]:
        with self._connection() as connection:
            rows = connection.execute(
                "SELECT configuration, track, COUNT(*), MIN(race_timestamp), MAX(race_timestamp),"
                " (SELECT experiment FROM races AS latest WHERE latest.configuration = races.configuration"
                "  ORDER BY race_timestamp DESC LIMIT 1)"
                " FROM races GROUP BY configuration, track ORDER BY MAX(race_timestamp) DESC"
            ).fetchall()
        return [Configuration(*row) for row in rows]

    def configurations_of(self, race_ids: list[str]) -> dict[str, str]:
        """The configuration each of these races is recorded under (races not recorded are left out)."""
        with self._connection() as connection:
            return dict(connection.execute(
                f"SELECT race_id, configuration FROM races WHERE race_id IN ({', '.join('?' * len(race_ids))})",
                race_ids).fetchall())

    def races_of(self, configuration: str) -> int:
        with self._connection() as connection:
            return connection.execute("SELECT COUNT(*) FROM races WHERE configuration = ?", (configuration,)).fetchone()[0]

    def resolve(self, prefix: str) -> str:
        """The configuration id that starts with prefix (ids are long; a few characters do, as in git)."""
        with self._connection() as connection:
            found = [row[0] for row in connection.execute(
                "SELECT DISTINCT configuration FROM races WHERE configuration LIKE ? || '%'", (prefix,))]
        if len(found) != 1:
            raise UnknownConfiguration(
                f"no configuration {prefix!r} in {self.path}" if not found
                else f"{prefix!r} is the start of {len(found)} configurations: give more of it")
        return found[0]

    def series(self, configuration: str, subject: str, metric: str) -> list[SeriesPoint]:
        """One figure of one subject over every race of the configuration, oldest first."""
        with self._connection() as connection:
            rows = connection.execute(
                "SELECT races.race_id, race_timestamp, experiment, value, unit FROM points"
                " JOIN races USING (race_id)"
                " WHERE configuration = ? AND subject = ? AND metric = ? ORDER BY race_timestamp, races.race_id",
                (configuration, subject, metric),
            ).fetchall()
        return [SeriesPoint(*row) for row in rows]

    def latest_spec(self, configuration: str) -> dict[str, Any]:
        with self._connection() as connection:
            (document,) = connection.execute(
                "SELECT document FROM races WHERE configuration = ? ORDER BY race_timestamp DESC LIMIT 1",
                (configuration,)).fetchone()
        return json.loads(document)["spec"]

    def subjects(self, configuration: str) -> list[str]:
        """The tasks (and "cluster", "nodes") the configuration's races have figures for."""
        with self._connection() as connection:
            return [row[0] for row in connection.execute(
                "SELECT DISTINCT subject FROM points JOIN races USING (race_id) WHERE configuration = ?"
                " ORDER BY subject", (configuration,))]
