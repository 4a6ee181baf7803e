"""Which of a local node's index files the page cache holds, by Lucene file extension.

An I/O-bound study asks not only how much page cache the node has (its memory cgroup says) but
what it holds: the stored fields (`.fdt`) a fetch reads, or the postings (`.doc`) a match reads.
util-linux's `fincore` (mincore(2) over each file) answers per file; this sums its answer by
extension. It counts a file's pages wherever they are charged, which for a node's own data
directory is the node's cgroup.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

FINCORE = "fincore"


def index_files(data_dir: Path) -> list[Path]:
    """The Lucene files of every shard under a node's path.data: indices/UUID/SHARD/index/, under
    nodes/0/ before 8.0."""
    shards = [*data_dir.glob("indices/*/*/index"), *data_dir.glob("nodes/*/indices/*/*/index")]
    return sorted(path for shard in shards for path in shard.iterdir() if path.is_file())


def by_extension(files: list[Path]) -> dict[str, dict[str, int]]:
    """{extension: {"size": bytes, "cached": bytes in the page cache}} over files. A file removed
    meanwhile (a merge) is left out; fincore rounds a file's cached bytes up to whole pages."""
    if not files:
        return {}
    done = subprocess.run([FINCORE, "--json", "--bytes", "--output", "RES,SIZE,FILE", "--", *map(str, files)],
                          capture_output=True, text=True, timeout=30)
    rows = json.loads(done.stdout)["fincore"] if done.stdout.strip() else []
    if not rows:  # none could be read: the reason is on stderr
        raise OSError(f"fincore: {done.stderr.strip() or f'exit {done.returncode}'}")
    totals: dict[str, dict[str, int]] = {}
    for row in rows:
        extension = Path(row["file"]).suffix.lstrip(".") or Path(row["file"]).name.split("_")[0]
        total = totals.setdefault(extension, {"size": 0, "cached": 0})
        total["size"] += int(row["size"])
        total["cached"] += int(row["res"])
    return totals
