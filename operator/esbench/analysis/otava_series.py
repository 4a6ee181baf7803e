"""Run by Apache Otava's own interpreter (scripts/otava-env.sh), not imported: change points of
one series, read as JSON from stdin ({"values": [...], "max_pvalue": ..., "min_magnitude": ...,
"window": ...}) and written as JSON to stdout, one object per change point."""

import json
import sys

from otava.analysis import compute_change_points

request = json.load(sys.stdin)
found, _weak = compute_change_points(
    request["values"], window_len=request["window"], max_pvalue=request["max_pvalue"],
    min_magnitude=request["min_magnitude"],
)
json.dump([
    {"index": int(point.index), "mean_before": float(point.stats.mean_1), "mean_after": float(point.stats.mean_2),
     "pvalue": float(point.stats.pvalue)}
    for point in found
], sys.stdout)
