"""Task windows from Rally's log (runner.taskwindows), on the log of a real race."""

from datetime import UTC, datetime
from itertools import pairwise

from esbench.runner import taskwindows
from tests.support.result_files import FIXTURES

FIXED_RATE = FIXTURES / "8.7.1-range-queries-fixed-rate"


def at(text: str) -> float:
    return datetime.strptime(text, "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=UTC).timestamp()


def test_every_task_of_a_real_race_has_a_window_and_windows_follow_the_schedule_without_overlap():
    windows = taskwindows.parse((FIXED_RATE / "rally.log").read_text())
    assert list(windows) == ["delete-index", "create-index", "check-cluster-health", "index-append",
                             "refresh-after-index", "range-1950s", "terms-1950s", "range-1900-1989", "terms-1900-1989"]
    for earlier, later in pairwise(windows.values()):
        assert earlier.end <= later.start
    # The searches ran 2 s of warm-up and 8 s measured (search_time_period); Rally logged 10.0 s.
    for name in ("range-1950s", "terms-1950s", "range-1900-1989", "terms-1900-1989"):
        assert 10.0 <= windows[name].seconds < 10.1


def test_a_task_of_several_workers_runs_from_the_first_start_to_the_last_finish():
    window = taskwindows.parse((FIXED_RATE / "rally.log").read_text())["index-append"]
    # Worker[0] started first, at 01:04:23,192 (logged after Worker[1]'s 01:04:23,195), and
    # Worker[1] finished last, at 01:04:27,20 (20 ms: Rally does not zero-pad them).
    assert (window.start, window.end) == (at("2026-11-23 01:04:23.192"), at("2026-11-23 01:04:27.020"))
    assert taskwindows.TaskWindow.rfc3339(window.start) == "2026-11-23T01:04:23.192Z"


def test_milliseconds_are_not_zero_padded_in_rallys_log():
    log = ("2026-01-02 03:04:05,7 ActorAddr-(T|:1)/PID:1 esrally.driver.driver INFO Worker[0] executing tasks: ['a', 'b']\n"
           "2026-01-02 03:04:06,70 ActorAddr-(T|:1)/PID:1 esrally.driver.driver INFO Worker[0] finished executing tasks "
           "['a', 'b'] in 1.0 seconds\n")
    windows = taskwindows.parse(log)
    # Tasks of one parallel element share their step's window.
    assert windows["a"] == taskwindows.TaskWindow("a", at("2026-01-02 03:04:05.007"), at("2026-01-02 03:04:06.070"))
    assert windows["b"].seconds == windows["a"].seconds


def test_a_task_that_never_finished_has_no_window():
    log = "2026-01-02 03:04:05,7 X/PID:1 esrally.driver.driver INFO Worker[0] executing tasks: ['cut-short']\n"
    assert taskwindows.parse(log) == {}
