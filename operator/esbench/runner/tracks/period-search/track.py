"""Rally parameter source of the period-search track: one query variant per task, each request
with another window of years, surname and tags, drawn from a seeded generator, so that caches
do not answer and every variant is asked the very same sequence of questions.

Loaded by Rally (its own Python), so it stands alone: nothing from esbench is imported here.
"""

import random

FIRST_YEAR, LAST_YEAR = 1550, 2020


def _ceil(year, unit):
    return -(-year // unit) * unit


def _terms(field, values):
    return {"terms": {field: [str(v) for v in values]}}


def _either(*clauses):
    # "Any of": a should list with at least one match; empty term lists are left out.
    kept = [c for c in clauses if not ("terms" in c and not next(iter(c["terms"].values())))]
    return {"bool": {"should": kept, "minimum_should_match": 1}}


def _range(field, lowest, highest):
    return {"range": {field: {"gte": lowest, "lte": highest}}}


def started_by(last):
    """start_year <= last, as the seed's terms-only form: whole centuries, then decades, then years."""
    century, decade = last // 100 * 100, last // 10 * 10
    return _either(_terms("start_century", range(FIRST_YEAR // 100 * 100, century, 100)),
                   _terms("start_decade", range(century, decade, 10)),
                   _terms("start_exact", range(decade, last + 1)))


def ended_from(first):
    """end_year >= first, the same way."""
    decade, century = _ceil(first, 10), _ceil(first, 100)
    return _either(_terms("end_exact", range(first, decade)),
                   _terms("end_decade", range(decade, century, 10)),
                   _terms("end_century", range(century, LAST_YEAR // 100 * 100 + 1, 100)))


def overlap(variant, first, last):
    """Clauses for "lived at some time between first and last" (start <= last and end >= first)."""
    if variant == "ranges":
        return [{"range": {"start_year": {"lte": last}}}, {"range": {"end_year": {"gte": first}}}]
    if variant == "integer-range":
        return [{"range": {"period": {"gte": first, "lte": last, "relation": "intersects"}}}]
    if variant == "decades-and-edges":  # the workaround the seed found on GitHub
        return [_either(_terms("start_decade", range(FIRST_YEAR // 10 * 10, last // 10 * 10, 10)),
                        _range("start_year", last // 10 * 10, last)),
                _either(_terms("end_decade", range(_ceil(first, 10), LAST_YEAR // 10 * 10 + 1, 10)),
                        _range("end_year", first, _ceil(first, 10) - 1))]
    if variant == "terms-only":
        return [started_by(last), ended_from(first)]
    raise ValueError(f"unknown variant {variant!r}")


def query(variant, surname, tags, first, last):
    """The seed's combined query, in query (scoring) context as it was: match, then terms, then the period."""
    must = [{"match": {"surname": surname}}]
    if variant != "match":
        must.append({"terms": {"tags": tags}})
    if variant not in ("match", "match-terms"):
        must += overlap(variant, first, last)
    return {"size": 20, "query": {"bool": {"must": must}}}


class PeriodQuery:
    def __init__(self, track, params, **kwargs):
        self._params = params
        self._index = params.get("index", "period-search")
        self._variant = params["variant"]
        self._surnames = params["surnames"]
        self._tags = params["tags"]
        self._random = random.Random(params.get("seed", 1))
        self.infinite = True

    def partition(self, partition_index, total_partitions):
        # Each client its own sequence; client 0 of every task the same one.
        source = PeriodQuery(None, {**self._params, "seed": self._params.get("seed", 1) * 1000 + partition_index})
        return source

    def params(self):
        rng = self._random
        first = rng.randint(1600, 1950)
        last = first + rng.randint(10, 60)
        body = query(self._variant, rng.choice(self._surnames), rng.sample(self._tags, 3), first, last)
        return {"index": self._index, "cache": False, "body": body}


def register(registry):
    registry.register_param_source("period-query", PeriodQuery)
