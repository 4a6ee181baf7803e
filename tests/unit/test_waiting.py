"""The suites' waits end before pytest-timeout ends their test, so the wait's own message and
diagnosis reach the report."""

import time

import pytest

from tests.support.waiting import DIAGNOSIS_SECONDS, wait_for


@pytest.mark.timeout(DIAGNOSIS_SECONDS + 2)
def test_a_wait_longer_than_its_tests_time_fails_with_its_diagnosis_before_pytest_timeout_fires():
    started = time.monotonic()
    with pytest.raises(AssertionError, match=r"timed out after [0-9]s of 600s \(the test's time was up\) "
                                             r"waiting for nothing\nthe pods, say"):
        wait_for(lambda: False, 600, what="nothing", diagnose=lambda: "the pods, say")
    assert time.monotonic() - started < 2.5


def test_a_wait_within_its_tests_time_keeps_its_own_timeout():
    with pytest.raises(AssertionError, match=r"^timed out after 0s waiting for nothing$"):
        wait_for(lambda: False, 0.3, what="nothing")
