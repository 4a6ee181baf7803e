"""The seed studies' figures come from their result files: each results/figures.md is what
scripts/study-figures.py makes of results/ now, and every figure with an interval that a study's
README quotes is one of them."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("study_figures", ROOT / "scripts" / "study-figures.py")
figures = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(figures)

GENERATED = figures.generated()
STUDIES = sorted(path.parent.parent for path in GENERATED)


def _summary_lines(study: Path) -> str:
    """The lines of the studies' summary that link this study."""
    text = (figures.STUDIES / "README.md").read_text()
    return "\n".join(line for line in text.splitlines() if f"]({study.name}/)" in line)


def _within(written: float, generated: float, decimals: int) -> bool:
    """The README's figure is the generated one rounded to the decimals the README writes."""
    return abs(written - generated) <= 0.5 * 10 ** -decimals + 1e-9


def _found(figure: list[float | None], decimals: int, generated: list[list[float | None]]) -> bool:
    return any(all(w is None or (g is not None and _within(w, g, decimals)) for w, g in zip(figure, candidate, strict=True))
               for candidate in generated)


@pytest.mark.parametrize("study", STUDIES, ids=lambda path: path.name)
def test_each_figures_file_is_what_the_script_makes_of_the_results_now(study):
    path = study / "results" / figures.FIGURES
    assert path.is_file() and path.read_text() == GENERATED[path], (
        f"{path.relative_to(ROOT)} is stale or missing: run `make figures` (scripts/study-figures.py) and commit it")


@pytest.mark.parametrize("study", STUDIES, ids=lambda path: path.name)
def test_every_interval_a_readme_quotes_is_in_its_studys_generated_figures(study):
    generated = [values for _, values, _ in figures.intervals(GENERATED[study / "results" / figures.FIGURES])]
    quoted = [(f"{study.name}/README.md", found) for found in figures.intervals((study / "README.md").read_text())]
    quoted += [("README.md (the summary)", found) for found in figures.intervals(_summary_lines(study))]
    missing = [f"{where}: {written}" for where, (written, values, decimals) in quoted
               if not _found(values, decimals, generated)]
    assert not missing, ("figures with an interval that the study's results/figures.md does not hold (correct them "
                         "from `make figures`, or list them in NOT_FROM_RESULTS with where they come from):\n"
                         + "\n".join(missing))


@pytest.mark.parametrize("study", sorted(figures.NOT_FROM_RESULTS), ids=str)
def test_every_figure_listed_as_from_outside_the_results_is_still_quoted(study):
    quoted = {written for written, _, _ in figures.intervals((figures.STUDIES / study / "README.md").read_text())}
    stale = sorted(set(figures.NOT_FROM_RESULTS[study]) - quoted)
    assert not stale, f"NOT_FROM_RESULTS lists figures {study}/README.md no longer quotes: {stale}"
