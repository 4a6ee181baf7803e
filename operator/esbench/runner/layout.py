"""The indices' segments as a race leaves them (`GET _segments`): how many, compound or not, their
documents and size, and the attributes Lucene records per segment (the stored fields' mode among
them). What a study's searches read, recorded with every race rather than checked by hand."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from esbench.api import models

# A bound on the record, whatever the cluster holds (a benchmark cluster holds the track's few).
MAX_INDICES = 20


def indices(segments: dict[str, Any]) -> list[models.IndexLayout]:
    """The layout of each index of a `GET _segments` answer but the system (dot) ones, by name."""
    found = []
    for name, index in sorted(segments.get("indices", {}).items()):
        if name.startswith("."):
            continue
        copies = [copy for shard in index.get("shards", {}).values() for copy in shard]
        listed = [segment for copy in copies for segment in copy.get("segments", {}).values()]
        attributes: dict[str, set[str]] = {}
        for segment in listed:
            for key, value in (segment.get("attributes") or {}).items():
                attributes.setdefault(key, set()).add(str(value))
        found.append(models.IndexLayout(
            index=name,
            shard_copies=len(copies),
            segments=len(listed),
            compound_segments=sum(1 for s in listed if s.get("compound")),
            documents=sum(s.get("num_docs", 0) for s in listed),
            size_bytes=sum(s.get("size_in_bytes", 0) for s in listed),
            attributes={key: sorted(values) for key, values in sorted(attributes.items())} or None,
        ))
    return found[:MAX_INDICES]


def read(get: Callable[[str], Any]) -> list[models.IndexLayout]:
    return indices(get("_segments?filter_path=indices.*.shards.*.segments.*.num_docs,"
                       "indices.*.shards.*.segments.*.size_in_bytes,indices.*.shards.*.segments.*.compound,"
                       "indices.*.shards.*.segments.*.attributes"))
