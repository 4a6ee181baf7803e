"""Where `esbench race` and `esbench run --es-url` take the cluster's credentials from."""

import click
import pytest
from click.testing import CliRunner

from esbench.api.race_report import RaceReport
from esbench.cli import credentials, main
from esbench.runner import race


def test_the_password_comes_from_the_environment_for_use_by_hand():
    assert credentials.from_env({"ES_USERNAME": "elastic", "ES_PASSWORD": "s3cr3t"}) == ("elastic", "s3cr3t")
    assert credentials.from_env({}) == (None, None)


def test_or_from_the_file_the_rally_job_mounts_without_its_line_break(tmp_path):
    (tmp_path / "password").write_text("s3cr3t\n")
    env = {"ES_USERNAME": "elastic", "ES_PASSWORD_FILE": str(tmp_path / "password")}
    assert credentials.from_env(env) == ("elastic", "s3cr3t")


def test_a_password_given_twice_or_an_unreadable_file_is_a_usage_error(tmp_path):
    (tmp_path / "password").write_text("s3cr3t")
    with pytest.raises(click.UsageError, match="ES_PASSWORD or ES_PASSWORD_FILE, not both"):
        credentials.from_env({"ES_PASSWORD": "other", "ES_PASSWORD_FILE": str(tmp_path / "password")})
    with pytest.raises(click.UsageError, match="cannot read .*missing"):
        credentials.from_env({"ES_PASSWORD_FILE": str(tmp_path / "missing")})


def test_esbench_race_hands_the_password_file_to_the_runner_and_prints_no_password(tmp_path, monkeypatch):
    (tmp_path / "password").write_text("s3cr3t")
    handed = []
    monkeypatch.setattr(race, "run", lambda settings: handed.append(settings) or RaceReport(succeeded=True))
    env = {"ESBENCH_SPEC": '{"elasticsearch": {"version": "8.15.3"}, "workload": {"track": "smoke"}}',
           "ES_USERNAME": "elastic", "ES_PASSWORD": None, "ES_PASSWORD_FILE": str(tmp_path / "password")}
    result = CliRunner().invoke(main.main, ["race", "--target-url=https://es:9200", f"--work-dir={tmp_path}"], env=env)
    assert result.exit_code == 0, result.output
    [settings] = handed
    assert (settings.username, settings.password) == ("elastic", "s3cr3t")
    assert "s3cr3t" not in result.output
