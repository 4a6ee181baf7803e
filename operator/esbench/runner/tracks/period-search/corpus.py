"""People of a genealogy site (seed 001): a surname, given names, tags and the years they are
known to have lived, indexed in every form the seed compared: two year fields, one
integer_range, and rounded keywords (century, decade, exact year) for terms-only queries.

Years: mostly 1700-1950, a few back to 1550; two in five people have a single known date
(both fields then hold that year, as the seed's note says), the others a span of up to 100
years.
"""

from esbench.runner.corpus import Vocabulary

DEFAULTS = {"doc_count": 200000, "seed": 1}

FIRST_YEAR, LAST_YEAR = 1550, 2020
TAGS = ["tree", "photo", "source", "census", "parish", "military", "notary", "verified"]


def rounded(year, unit):
    return str(year // unit * unit)


def documents(options, rng):
    surnames, given = Vocabulary(size=3000), Vocabulary(size=800)
    for i in range(int(options["doc_count"])):
        start = int(rng.triangular(FIRST_YEAR, LAST_YEAR - 10, 1880))
        end = start if rng.random() < 0.4 else min(LAST_YEAR, start + int(abs(rng.gauss(45, 25))))
        yield {
            "id": i,
            "surname": surnames.text(rng, 1),
            "given_names": given.text(rng, rng.randint(1, 3)),
            "tags": rng.sample(TAGS, rng.randint(1, 4)),
            "start_year": start,
            "end_year": end,
            "period": {"gte": start, "lte": end},
            **{f"start_{unit}": rounded(start, size) for unit, size in (("century", 100), ("decade", 10), ("exact", 1))},
            **{f"end_{unit}": rounded(end, size) for unit, size in (("century", 100), ("decade", 10), ("exact", 1))},
        }
