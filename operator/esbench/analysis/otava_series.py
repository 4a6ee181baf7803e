"""Run by Apache Otava's own interpreter (scripts/otava-env.sh), not imported: the change points
of series, read as JSON from stdin ({"series": [[...], ...], "max_pvalue": ..., "min_magnitude":
..., "window": ...}) and written as JSON to stdout, a list of change points per series."""

import json
import sys

from otava.analysis import compute_change_points

request = json.load(sys.stdin)
answer = []
for values in request["series"]:
    found, _weak = compute_change_points(
        values, window_len=request["window"], max_pvalue=request["max_pvalue"], min_magnitude=request["min_magnitude"],
    )
    answer.append([
        {"index": int(point.index), "mean_before": float(point.stats.mean_1), "mean_after": float(point.stats.mean_2),
         "pvalue": float(point.stats.pvalue)}
        for point in found
    ])
json.dump(answer, sys.stdout)
