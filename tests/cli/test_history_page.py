"""The history page opened in a real browser (headless Chromium, Debian's package): its chart is
drawn, the series and its regression's line in their colours, not only present as HTML."""

from __future__ import annotations

import json
import shutil
import subprocess

import numpy as np
import pytest
from matplotlib import colors, image

from esbench.analysis import charts
from esbench.history import records
from tests.support.history import nightly, write_list

WIDTH = 1200


def _pixels_near(picture: np.ndarray, colour: str, tolerance: float = 0.08) -> int:
    wanted = np.array(colors.to_rgb(colour))
    return int((np.abs(picture[:, :, :3] - wanted).max(axis=2) < tolerance).sum())


def test_the_history_page_draws_its_chart_in_a_browser(esbench, tmp_path):
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.fail("chromium not found: make deps installs it (scripts/system-packages.sh)", pytrace=False)
    steady = list(20 * np.random.default_rng(3).lognormal(0, 0.05, 12))
    runs = nightly(steady[:7] + [v * 1.5 for v in steady[7:]])
    added = esbench("history", "add", str(write_list(tmp_path / "runs.json", runs)))
    assert added.exit_code == 0, added.stdout + added.stderr
    configuration = records.record(runs[0]).configuration
    shown = esbench("history", "show", configuration[:8], "--task", "ranges", "--format", "json")
    assert [c["index"] for c in json.loads(shown.stdout)["series"][0]["changePoints"]] == [7]
    paged = esbench("history", "show", configuration[:8], "--task", "ranges", "--html", "page.html")
    assert paged.exit_code == 0, paged.stdout + paged.stderr

    screenshot = tmp_path / "page.png"
    subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    f"--window-size={WIDTH},1000", f"--screenshot={screenshot}", (tmp_path / "page.html").as_uri()],
                   check=True, capture_output=True, timeout=120)
    picture = image.imread(screenshot)
    assert picture.shape[1] == WIDTH
    # The series' line and dots, the regression's dashed line and label: only the chart has these colours.
    series_blue, regression_red = _pixels_near(picture, "tab:blue"), _pixels_near(picture, charts.KIND_COLOURS["regression"])
    assert series_blue > 500 and regression_red > 100, (series_blue, regression_red)
    assert _pixels_near(picture, charts.KIND_COLOURS["improvement"]) == 0
