"""The documents of the seed's pull request: {"text": "text NNNN"}, the distinct_values values in
order, again and again (the PR indexed one bulk of "text 0001" .. "text 1000" a thousand times),
so a fraction of the values selects the same fraction of the documents, spread through the index."""

DEFAULTS = {"doc_count": 1_000_000, "seed": 1, "distinct_values": 1000}


def documents(options, rng):
    # rng is unused: the PR's corpus has nothing random in it.
    distinct = int(options["distinct_values"])
    for i in range(int(options["doc_count"])):
        yield {"text": f"text {i % distinct + 1:04d}"}
