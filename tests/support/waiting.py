"""The one poll loop of the test suites: wait until a predicate holds, or fail saying what for.
A pytest plugin too (tests/conftest.py): a test's waits end before pytest-timeout ends the test."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

# Time a failed wait keeps to list what it waited on (pods, events, logs) before pytest-timeout fires.
DIAGNOSIS_SECONDS = 60
# When the running test's time is up, less DIAGNOSIS_SECONDS: no wait outlives it, so a slow wait
# fails naming what it waited for, with its diagnosis, rather than being killed by pytest-timeout
# with a bare stack.
_test_ends: float | None = None


def pytest_timeout_set_timer(item, settings) -> None:
    """pytest-timeout's hook, as it starts the test's clock. Returns None, so its own timer is set too."""
    global _test_ends
    _test_ends = time.monotonic() + settings.timeout - DIAGNOSIS_SECONDS if settings.timeout else None


def pytest_timeout_cancel_timer(item) -> None:
    global _test_ends
    _test_ends = None


def wait_for(predicate: Callable[[], Any], timeout: float = 30, what: str = "condition", interval: float = 0.2,
             diagnose: Callable[[], str] = lambda: "") -> Any:
    """The predicate's first truthy value; AssertionError (with diagnose()'s text) after timeout,
    or sooner when the test's own time is up."""
    started = time.monotonic()
    deadline = started + timeout
    cut_short = _test_ends is not None and _test_ends < deadline
    if cut_short:
        deadline = _test_ends
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            details = diagnose()
            waited = f"{time.monotonic() - started:.0f}s of {timeout:.0f}s (the test's time was up)" if cut_short \
                else f"{timeout:.0f}s"
            raise AssertionError(f"timed out after {waited} waiting for {what}" + (f"\n{details}" if details else ""))
        time.sleep(interval)
