"""Periods (a reign, a building's use, a company's life): a start and an end year, plus the
decades the period touches, precomputed at index time.

"Overlaps the years A..B" is `start_year <= B AND end_year >= A`, two range clauses; when A
and B are decade bounds it is exactly "decades contains one of A's..B's decades", one terms
query on the rounded values. The generator writes both so the track can compare them.
"""

from esbench.runner.corpus import Vocabulary

DEFAULTS = {"doc_count": 100000, "seed": 1}

FIRST_YEAR, LAST_YEAR = 1800, 2024


def decades(start_year, end_year):
    return [str(d) for d in range(start_year // 10 * 10, end_year // 10 * 10 + 1, 10)]


def documents(options, rng):
    vocabulary = Vocabulary(size=2000)
    for i in range(int(options["doc_count"])):
        start = rng.randint(FIRST_YEAR, LAST_YEAR)
        # Mostly short periods, a few very long ones (as with people, firms, buildings).
        end = min(LAST_YEAR, start + int(rng.expovariate(1 / 25)))
        yield {
            "id": i,
            "name": vocabulary.text(rng, 2),
            "start_year": start,
            "end_year": end,
            "decades": decades(start, end),
        }
