"""A node's index files in the page cache (sidecar.pagecache), by the real fincore on
real files: one read (cached), one whose pages were dropped; and how `esbench show` lists them."""

import os

import pytest
from rich.console import Console

from esbench.api import models
from esbench.cli import rendering
from esbench.sidecar import pagecache

PAGE = os.sysconf("SC_PAGE_SIZE")


def write(path, size):
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as out:
        out.write(os.urandom(size))
        out.flush()
        os.fsync(out.fileno())


def drop_from_cache(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)  # clean pages (fsynced) go at once
    finally:
        os.close(fd)


def test_each_extension_sums_its_files_bytes_and_the_cached_part_of_them(tmp_path):
    shard = tmp_path / "indices" / "uuid" / "0" / "index"
    write(shard / "_0.fdt", 40 * PAGE)
    write(shard / "_1.fdt", 10 * PAGE)
    write(shard / "_0.doc", 8 * PAGE)
    write(shard / "segments_2", 100)
    write(tmp_path / "indices" / "uuid" / "_state" / "state-1.st", 100)  # not a shard's index file
    drop_from_cache(shard / "_0.fdt")
    (shard / "_0.doc").read_bytes()

    files = pagecache.index_files(tmp_path)
    assert [f.name for f in files] == ["_0.doc", "_0.fdt", "_1.fdt", "segments_2"]
    totals = pagecache.by_extension(files)
    assert totals["fdt"]["size"] == 50 * PAGE and totals["fdt"]["cached"] == pytest.approx(10 * PAGE, abs=2 * PAGE)
    assert totals["doc"] == {"size": 8 * PAGE, "cached": 8 * PAGE}
    assert totals["segments"] == {"size": 100, "cached": PAGE}  # a page at least: fincore counts pages


def test_the_layout_before_8_0_is_found_too_and_no_files_is_no_figures(tmp_path):
    write(tmp_path / "nodes" / "0" / "indices" / "uuid" / "0" / "index" / "_0.cfs", PAGE)
    assert [f.name for f in pagecache.index_files(tmp_path)] == ["_0.cfs"]
    assert pagecache.by_extension([]) == {}


def test_files_it_cannot_read_are_an_error_with_fincores_reason(tmp_path):
    with pytest.raises(OSError, match="No such file"):
        pagecache.by_extension([tmp_path / "gone.fdt"])


def test_show_lists_each_tasks_cached_index_files_main_kinds_first():
    files = {"tip": models.IndexFiles(size_bytes=2048, cached_bytes=1024),
             "fdt": models.IndexFiles(size_bytes=100 * 2**20, cached_bytes=5 * 2**20),
             "doc": models.IndexFiles(size_bytes=2**20, cached_bytes=2**20)}
    tasks = [models.TaskResult(task="random-hits", resources=models.TaskResources(seconds=80, nodes=1, index_files=files)),
             models.TaskResult(task="bulk", resources=models.TaskResources(seconds=80, nodes=1))]
    console = Console(width=200, record=True)
    for table in rendering.results_tables(models.Results(race_id="r", tasks=tasks)):
        console.print(table)
    text = console.export_text()
    held = text[text.index("Index files in the page cache"):]
    assert "bulk" not in held
    header = next(line for line in held.splitlines() if "task" in line)
    assert header.index("fdt") < header.index("doc") < header.index("tip")
    assert "5.0 MiB of 100.0 MiB" in held and "1.0 MiB of 1.0 MiB" in held and "1.0 KiB of 2.0 KiB" in held
