"""The one poll loop of the test suites: wait until a predicate holds, or fail saying what for."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def wait_for(predicate: Callable[[], Any], timeout: float = 30, what: str = "condition", interval: float = 0.2,
             diagnose: Callable[[], str] = lambda: "") -> Any:
    """The predicate's first truthy value; AssertionError (with diagnose()'s text) after timeout."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            details = diagnose()
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}" + (f"\n{details}" if details else ""))
        time.sleep(interval)
