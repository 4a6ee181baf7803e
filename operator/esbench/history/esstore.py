"""The history on Kubernetes: an Elasticsearch cluster, where Rally users keep their results too.

Per race, in one bulk request: Rally's own results documents in `rally-results-YYYY-MM`
(rallyresults: what Rally's results store would index, plus an `esbench` object naming the
Experiment and its series), and esbench's record in `esbench-races` (the Experiment as it
ended, its configuration, its points and Rally's race.json). Per sweep, its last status in
`esbench-sweeps`. Every document has a fixed id, so writing a race again (a retry after a
failure part-way) adds nothing. `esbench history pull` reads the races and sweeps back.
"""

from __future__ import annotations

import json
import urllib.error
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from esbench.esclient import Client
from esbench.history import rallyresults
from esbench.history.records import Record, SeriesPoint

RACES_INDEX = "esbench-races"
SWEEPS_INDEX = "esbench-sweeps"
PAGE = 500  # documents per search when reading the store back
# Rally's results: strings are keywords and numbers doubles (a first integer value must not make a
# field `long` for the fractions that follow), the timestamp is Rally's basic format. Created
# only where no template of that name exists: Rally's own, when it has written there, stays.
RESULTS_TEMPLATE = {
    "index_patterns": [f"{rallyresults.INDEX_PREFIX}*"],
    "template": {"mappings": {
        "date_detection": False,
        "dynamic_templates": [
            {"strings": {"match_mapping_type": "string", "mapping": {"type": "keyword"}}},
            {"numbers": {"match_mapping_type": "long", "mapping": {"type": "double"}}},
        ],
        "properties": {
            "race-timestamp": {"type": "date", "format": "basic_date_time_no_millis"},
            "active": {"type": "boolean"},
            "distribution-major-version": {"type": "short"},
        },
    }},
}
# esbench's own indices: what is searched is mapped; the Experiment, race.json and the sweep
# are kept whole but not indexed (their free-form fields would clash from one race to the next).
KEPT_WHOLE = {"type": "object", "enabled": False}
RACES_MAPPINGS = {
    "dynamic": "strict",
    "properties": {
        "race-id": {"type": "keyword"},
        "race-timestamp": {"type": "date"},
        "namespace": {"type": "keyword"},
        "experiment": {"type": "keyword"},
        "configuration": {"type": "keyword"},
        "track": {"type": "keyword"},
        "sweep": {"type": "keyword"},
        "cell": {"type": "keyword"},
        "repetition": {"type": "integer"},
        "points": {"type": "nested", "properties": {
            "subject": {"type": "keyword"}, "metric": {"type": "keyword"},
            "value": {"type": "double"}, "unit": {"type": "keyword"}}},
        "document": KEPT_WHOLE,
        "race-json": KEPT_WHOLE,
    },
}
SWEEPS_MAPPINGS = {
    "dynamic": "strict",
    "properties": {
        "uid": {"type": "keyword"},
        "namespace": {"type": "keyword"},
        "sweep": {"type": "keyword"},
        "phase": {"type": "keyword"},
        "completion-time": {"type": "date"},
        "document": KEPT_WHOLE,
    },
}


class StoreUnavailable(Exception):
    """The store could not be reached, or refused what was written: the write may be tried again."""


@dataclass
class ElasticsearchStore:
    client: Client
    # The indices and template made in this process: made once, not before every write (made again
    # after a failure, in case the store was emptied meanwhile).
    prepared: set[str] = field(default_factory=set)

    def add(self, record: Record) -> None:
        """Writes the race; raises StoreUnavailable."""
        identity = {"namespace": _namespace(record.document), "experiment": record.experiment,
                    "configuration": record.configuration, "sweep": record.sweep, "cell": record.cell,
                    "repetition": record.repetition}
        actions: list[tuple[str, str, dict[str, Any]]] = []
        if record.race_json:
            index = rallyresults.index_name(record.race_json)
            actions += [(index, f"{record.race_id}-{n}", {**document, "esbench": identity})
                        for n, document in enumerate(rallyresults.documents(record.race_json))]
        actions.append((RACES_INDEX, record.race_id, {
            "race-id": record.race_id, "race-timestamp": record.race_timestamp, **identity, "track": record.track,
            "points": [asdict(point) for point in record.points], "document": record.document,
            "race-json": record.race_json,
        }))
        self._prepare(with_results=bool(record.race_json))
        self._bulk(actions)

    def add_sweep(self, document: dict[str, Any]) -> None:
        """Writes the sweep's latest status over any earlier one; raises StoreUnavailable."""
        metadata, status = document["metadata"], document.get("status") or {}
        self._prepare(with_results=False)
        self._bulk([(SWEEPS_INDEX, metadata["uid"], {
            "uid": metadata["uid"], "namespace": metadata.get("namespace"), "sweep": metadata["name"],
            "phase": status.get("phase"), "completion-time": status.get("completionTime"), "document": document,
        })])

    def races(self) -> Iterator[tuple[dict[str, Any], dict[str, Any] | None]]:
        """Every race the store holds, oldest first: (the Experiment as it ended, Rally's race.json)."""
        for race in self._every(RACES_INDEX, "race-timestamp", "race-id"):
            yield race["document"], race.get("race-json")

    def sweeps(self) -> Iterator[dict[str, Any]]:
        """Every sweep the store holds, as it ended."""
        for sweep in self._every(SWEEPS_INDEX, "completion-time", "uid"):
            yield sweep["document"]

    def series(self, configurations: Sequence[str], metrics: Sequence[str]
               ) -> dict[tuple[str, str, str], list[SeriesPoint]]:
        """The series of CONFIGURATIONS: each (configuration, subject, metric) of METRICS over its
        races, oldest first (as the local history orders them)."""
        found: dict[tuple[str, str, str], list[SeriesPoint]] = {}
        wanted = {"terms": {"configuration": list(configurations)}}
        for race in self._every(RACES_INDEX, "race-timestamp", "race-id", wanted,
                                ["race-id", "race-timestamp", "namespace", "experiment", "configuration", "sweep",
                                 "points"]):
            sweep = f"{race['namespace']}/{race['sweep']}" if race.get("sweep") else None
            for point in race["points"]:
                if point["metric"] in metrics:
                    found.setdefault((race["configuration"], point["subject"], point["metric"]), []).append(
                        SeriesPoint(race["race-id"], race["race-timestamp"], race["experiment"], point["value"],
                                    point["unit"], sweep))
        return found

    def _every(self, index: str, order: str, tiebreaker: str, wanted: dict[str, Any] | None = None,
               fields: list[str] | None = None) -> Iterator[dict[str, Any]]:
        """The documents of INDEX (those matching the query WANTED; their FIELDS), sorted."""
        after: list[Any] | None = None
        while True:
            query: dict[str, Any] = {"size": PAGE, "sort": [{order: "asc"}, {tiebreaker: "asc"}]}
            if wanted:
                query["query"] = wanted
            if fields:
                query["_source"] = fields
            if after:
                query["search_after"] = after
            answer = self._call("POST", f"{index}/_search", query, absent="index_not_found_exception")
            hits = (answer or {}).get("hits", {}).get("hits", [])
            yield from (hit["_source"] for hit in hits)
            if len(hits) < PAGE:
                return
            after = hits[-1]["sort"]

    def _prepare(self, with_results: bool) -> None:
        for index, mappings in ((RACES_INDEX, RACES_MAPPINGS), (SWEEPS_INDEX, SWEEPS_MAPPINGS)):
            if index not in self.prepared:
                self._call("PUT", index, {"mappings": mappings}, exists_already="resource_already_exists_exception")
                self.prepared.add(index)
        if with_results and rallyresults.INDEX_PREFIX not in self.prepared:
            self._call("PUT", "_index_template/rally-results?create=true", RESULTS_TEMPLATE,
                       exists_already="already exists")
            self.prepared.add(rallyresults.INDEX_PREFIX)

    def _bulk(self, actions: list[tuple[str, str, dict[str, Any]]]) -> None:
        lines = []
        for index, document_id, document in actions:
            lines += [json.dumps({"index": {"_index": index, "_id": document_id}}), json.dumps(document)]
        answer = self._call("POST", "_bulk?refresh=wait_for", ("\n".join(lines) + "\n").encode(),
                            content_type="application/x-ndjson")
        if answer.get("errors"):
            self.prepared.clear()
            failed = next(item["index"] for item in answer["items"] if item["index"].get("error"))
            raise StoreUnavailable(f"{failed['_index']} refused document {failed['_id']}: {failed['error']}")

    def _call(self, method: str, path: str, body: Any, exists_already: str | None = None,
              absent: str | None = None, content_type: str = "application/json") -> Any:
        """EXISTS_ALREADY, ABSENT: the error types that are no failure here (answered as None)."""
        try:
            return self.client.request(method, path, body, timeout=30, content_type=content_type)
        except urllib.error.HTTPError as error:
            text = error.read().decode(errors="replace")
            if (exists_already and error.code == 400 and exists_already in text) or (
                    absent and error.code == 404 and absent in text):
                return None
            self.prepared.clear()
            raise StoreUnavailable(f"{self.client.url} answered {method} {path.split('?')[0]} "
                                   f"with HTTP {error.code}: {text[:300]}") from error
        except (urllib.error.URLError, OSError, ValueError) as error:
            self.prepared.clear()
            raise StoreUnavailable(f"{self.client.url} cannot be reached: {error}") from error


def _namespace(document: dict[str, Any]) -> str | None:
    return (document.get("metadata") or {}).get("namespace")
