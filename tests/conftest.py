import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Test support modules (harness, stand-ins) are imported as `tests.support.*`, also under bare `pytest`.
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# The waits' deadline (first: the fixtures import it); one plugin module of fixtures, so that every
# test directory of a pytest run shares one control plane.
pytest_plugins = ["tests.support.waiting", "tests.support.fixtures"]


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return ROOT


@pytest.fixture(scope="session", autouse=True)
def history_of_the_session(tmp_path_factory) -> Path:
    """Runs that tests make are recorded in a history of the session's, never in the user's."""
    path = tmp_path_factory.mktemp("history") / "history.sqlite"
    os.environ["ESBENCH_HISTORY"] = str(path)
    return path
