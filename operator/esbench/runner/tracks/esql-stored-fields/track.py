"""Rally parameter source of the esql-stored-fields track (seed 003): the PR's ES|QL query,
`STATS SUM(LENGTH(text))` over the documents whose `text.keyword` is one of the first N of the
corpus's values, N being the task's fraction of them. `text` is a text field, so ES|QL loads it
from stored fields (`_source`) for every matching document: what the PR sped up.

Loaded by Rally (its own Python), so it stands alone: nothing from esbench is imported here.
"""


def values(numbers):
    return ", ".join(f'"text {n:04d}"' for n in numbers)


def where(fraction, distinct_values):
    """The filter that keeps `fraction` % of the values: none at 100 %, NOT IN the left-out values
    above half (the PR's 99.9 % was `NOT text.keyword IN ("text 0998")`), IN the kept ones below."""
    kept = round(distinct_values * fraction / 100)
    if not 0 < kept <= distinct_values:
        raise ValueError(f"fraction {fraction} % of {distinct_values} values keeps {kept} of them")
    if kept == distinct_values:
        return None
    if 2 * kept >= distinct_values:
        return f"NOT text.keyword IN ({values(range(kept + 1, distinct_values + 1))})"
    return f"text.keyword IN ({values(range(1, kept + 1))})"


def query(index, fraction, distinct_values):
    parts = [f"FROM {index}"]
    condition = where(fraction, distinct_values)
    if condition:
        parts.append(f"WHERE {condition}")
    parts.append("STATS SUM(LENGTH(text))")
    return " | ".join(parts)


def body(pragma):
    # Release builds refuse pragmas unless the request accepts their risks.
    return {"pragma": pragma, "accept_pragma_risks": True} if pragma else {}


class FractionQuery:
    def __init__(self, track, params, **kwargs):
        self._params = {
            "query": query(params.get("index", "esql-stored-fields"), float(params["fraction"]),
                           int(params["distinct-values"])),
            "body": body(params.get("pragma") or {}),
            # Rally records took, documents_found and values_loaded of each response.
            "detailed-results": True,
        }
        self.infinite = True

    def partition(self, partition_index, total_partitions):
        return self

    def params(self):
        # Rally's esql runner adds the query to the body it is given: a copy each time.
        return {**self._params, "body": dict(self._params["body"])}


def register(registry):
    registry.register_param_source("stored-fields-fraction", FractionQuery)
