"""esbench's Rally results documents are exactly what Rally's own code makes of a race.json."""

import json
import subprocess
from pathlib import Path

import pytest

from esbench.history import rallyresults
from tests.support.experiments import RACE_FIXTURES

# Rally's own: the race with its GlobalStats, as its Elasticsearch results store indexes it (to_result_dicts).
RALLYS_OWN = """
import json, sys
from esrally import metrics
made = []
for path in sys.argv[1:]:
    race = metrics.Race.from_dict(json.load(open(path)))
    race.results = metrics.GlobalStats(race.results)
    made.append(race.to_result_dicts())
print(json.dumps(made))
"""
RACES = sorted(RACE_FIXTURES.glob("*.json"))


@pytest.fixture(scope="module")
def rallys_documents(esrally) -> dict[str, list[dict]]:
    python = Path(esrally).parent / "python"
    made = subprocess.run([str(python), "-c", RALLYS_OWN, *map(str, RACES)], capture_output=True, text=True, check=True)
    return {path.name: documents for path, documents in zip(RACES, json.loads(made.stdout), strict=True)}


@pytest.mark.parametrize("race", RACES, ids=lambda path: path.stem)
def test_the_documents_of_a_race_are_rallys_own(rallys_documents, race):
    ours = rallyresults.documents(json.loads(race.read_text()))
    assert ours == rallys_documents[race.name]
    assert any(document.get("task") and document["name"] == "service_time" for document in ours) or "aborted" in race.name


def test_the_index_is_the_races_month():
    assert rallyresults.index_name({"race-timestamp": "20261121T090612Z"}) == "rally-results-2026-11"
