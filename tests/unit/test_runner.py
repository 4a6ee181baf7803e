"""The runner's own small rules (its races run in tests/runner)."""

from esbench import runner
from esbench.report import FailureKind, RaceReport


def test_every_failure_kind_has_its_own_non_zero_exit_status():
    statuses = [runner.EXIT_CODES[kind] for kind in FailureKind]
    assert len(set(statuses)) == len(FailureKind) and 0 not in statuses and 1 not in statuses and 2 not in statuses
    assert runner.exit_code(RaceReport(succeeded=True)) == 0
    assert runner.exit_code(runner.failed(FailureKind.RACE_ERRORS, "x")) == 14


def test_secrets_are_redacted_wherever_they_appear():
    redact = runner.Redactor("s3cr3t", None, "")
    assert redact("user:s3cr3t@host s3cr3t") == "user:*****@host *****"
    assert runner.Redactor()("nothing to hide") == "nothing to hide"


def test_a_runner_bug_still_ends_in_a_report(tmp_path):
    settings = runner.RaceSettings(spec=None, target_url="http://x", race_id="r", work_dir=tmp_path, password="pw")
    lines = []

    class Sink:
        def write(self, text):
            lines.append(text)

        def flush(self):
            pass

    report = runner.race(settings, out=Sink())
    assert report.failure.kind == FailureKind.RACE_FAILED
    assert report.failure.message.startswith("esbench runner error: AttributeError")
    assert "Traceback" in "".join(lines)
