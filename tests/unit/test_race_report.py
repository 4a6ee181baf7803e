"""The runner-to-operator report survives the trip through a pod log."""

import base64
import gzip
import json

import pytest

from esbench.api.models import Results, TaskResult, Throughput
from esbench.api.race_report import (
    MARKER,
    Failure,
    RaceReport,
    UnreadableReport,
    decode_report,
    encode_report,
)
from esbench.api.reasons import Reason


def test_report_round_trips_through_a_noisy_log_in_short_lines():
    race_json = {"race-id": "r1", "results": {"blob": "x" * 50_000, "n": list(range(5000))}}
    report = RaceReport(succeeded=True, results=Results(race_id="r1", tasks=[
        TaskResult(task="index-append", throughput=Throughput(median=1000.0, unit="docs/s"))]),
        race_json=race_json)
    lines = encode_report(report)
    assert len(lines) > 1 and all(len(line) < 3100 for line in lines)
    log = "\n".join(["[INFO] Racing on track [smoke]"] + lines + ["bye"])
    assert decode_report(log) == report


def test_the_last_complete_report_wins_and_a_truncated_one_is_ignored():
    first = RaceReport(succeeded=False, failure=Failure(kind=Reason.TRACK_ERROR, message="Unused track parameters"))
    second = RaceReport(succeeded=True)
    lines = encode_report(first) + encode_report(second)
    assert decode_report("\n".join(lines)) == second
    big = encode_report(RaceReport(succeeded=True, race_json={"n": [str(i) * 3 for i in range(20000)]}))
    assert len(big) > 1
    assert decode_report("\n".join(encode_report(first) + big[:-1])) == first


def test_no_report_in_a_log_without_one():
    assert decode_report("Traceback (most recent call last):\n  boom") is None


def test_report_lines_that_make_no_complete_report_are_unreadable_not_absent():
    big = encode_report(RaceReport(succeeded=True, race_json={"n": [str(i) * 3 for i in range(20000)]}))
    with pytest.raises(UnreadableReport, match="no complete report"):
        decode_report("\n".join(big[:-1]))


@pytest.mark.parametrize("payload", [
    "not-base64!",  # garbled
    "H4sIAAAAAAAA",  # a gzip header cut short
])
def test_a_garbled_report_is_unreadable(payload):
    with pytest.raises(UnreadableReport, match="cannot be read"):
        decode_report(f"{MARKER} 1/1 {payload}")


def test_a_report_from_a_runner_with_fields_this_version_does_not_know_is_unreadable():
    newer = {"succeeded": True, "measuredWith": "a newer runner"}
    payload = base64.b64encode(gzip.compress(json.dumps(newer).encode())).decode()
    with pytest.raises(UnreadableReport, match="cannot be read"):
        decode_report(f"{MARKER} 1/1 {payload}")
