"""The runner's own small rules (its races run in tests/runner)."""

import io

import pytest

from esbench.api import models
from esbench.api.race_report import RaceReport
from esbench.api.reasons import RACE_FAILURES, Reason
from esbench.runner import esrallyprocess, race


def make_spec(**workload) -> models.ExperimentSpec:
    return models.ExperimentSpec.model_validate({"elasticsearch": {"version": "8.15.3"}, "workload": {"track": "smoke", **workload}})


def test_every_failure_kind_has_its_own_non_zero_exit_status():
    statuses = [race.EXIT_CODES[kind] for kind in RACE_FAILURES]
    assert len(set(statuses)) == len(RACE_FAILURES) and 0 not in statuses and 1 not in statuses and 2 not in statuses
    assert race.exit_code(RaceReport(succeeded=True)) == 0
    assert race.exit_code(race.failed(Reason.RACE_ERRORS, "x")) == 14


def test_secrets_are_redacted_wherever_they_appear():
    redact = race.Redactor("s3cr3t", None, "")
    assert redact("user:s3cr3t@host s3cr3t") == "user:*****@host *****"
    assert race.Redactor()("nothing to hide") == "nothing to hide"


def test_a_runner_bug_still_ends_in_a_report(tmp_path):
    settings = race.RaceSettings(spec=None, target_url="http://x", race_id="r", work_dir=tmp_path, password="pw")
    lines = []

    class Sink:
        def write(self, text):
            lines.append(text)

        def flush(self):
            pass

    report = race.run(settings, out=Sink())
    assert report.failure.kind == Reason.RACE_FAILED
    assert report.failure.message.startswith("esbench runner error: AttributeError")
    assert "Traceback" in "".join(lines)


def test_a_valid_spec_is_not_rejected():
    assert race.spec_rejection(make_spec()) is None


@pytest.mark.parametrize("workload, fragment", [
    ({"track": "geonames"}, "workload.track must name a bundled track (smoke, indexing"),
    ({"source": "Git", "track": "x"}, "workload.repository is required when workload.source is Git"),
    ({"repository": {"url": "https://example.com/t.git"}}, "workload.repository is required when workload.source is Git, and only then"),
    ({"includeTasks": ["a"], "excludeTasks": ["b"]}, "set either workload.includeTasks or workload.excludeTasks, not both"),
    ({"maxErrorRate": 0.1}, "workload.maxErrorRate needs workload.onError continue"),
    ({"includeTasks": ["index-append", "match-all"]}, "workload.includeTasks runs index-append without create-index"),
])
def test_a_spec_handed_to_the_runner_meets_the_crds_rules(workload, fragment):
    # The typed model lets these through; the CRD (as the API server applies it) does not.
    rejection = race.spec_rejection(make_spec(**workload))
    assert fragment in rejection, rejection


@pytest.mark.parametrize("first_line, interpreter", [
    ("#!/opt/rally/bin/python3\n", ["/opt/rally/bin/python3"]),  # pip's console script
    ("#!/usr/bin/env python3\n", ["/usr/bin/env", "python3"]),
])
def test_a_python_esrally_is_started_through_the_launcher_by_its_own_interpreter(tmp_path, first_line, interpreter):
    script = tmp_path / "esrally"
    script.write_text(first_line + "from esrally.rally import main\n")
    script.chmod(0o755)
    assert esrallyprocess.esrally_argv(str(script)) == [*interpreter, str(esrallyprocess.LAUNCHER)]
    assert esrallyprocess.LAUNCHER.exists() and "esrally" in esrallyprocess.LAUNCHER.name  # Rally finds its processes by that


def test_an_esrally_that_is_no_python_script_is_started_as_it_is(tmp_path):
    wrapper = tmp_path / "esrally"
    wrapper.write_text("#!/bin/sh\nexec docker run rally \"$@\"\n")
    wrapper.chmod(0o755)
    assert esrallyprocess.esrally_argv(str(wrapper)) == [str(wrapper)]
    assert esrallyprocess.esrally_argv("no-such-esrally") == ["no-such-esrally"]


def test_a_profiler_that_cannot_stop_leaves_the_race_standing_and_says_why():
    class Gone:
        def stop(self) -> None:
            raise RuntimeError("async-profiler stop failed: no such process")

    out = io.StringIO()
    problem = race.stop_profiler(Gone(), out)
    assert problem == "the profiler could not be stopped: async-profiler stop failed: no such process"
    assert problem in out.getvalue()  # in the log, and returned to be told in results.profile.problem


@pytest.mark.parametrize("timeout, budget", [(30, 22.5), (180, 135), (7200, 7155)])
def test_esrally_gets_the_race_timeout_less_a_reporting_margin_of_at_most_a_quarter(timeout, budget):
    assert race.rally_budget(timeout) == budget
