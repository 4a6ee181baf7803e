"""Collapsed stacks (esbench.analysis.profiles): what a task's profile says, and how two differ."""

from __future__ import annotations

import pytest

from esbench.analysis import asyncprofiler, profiles
from esbench.api import models

# As async-profiler's converter writes them: frames root first, a kind after each name, the count last.
FULL_SOURCE = """\
java.lang.Thread.run_[0];org.elasticsearch.search.fetch.FetchPhase.execute_[j];org.apache.lucene.util.compress.LZ4.decompress_[j] 30
java.lang.Thread.run_[0];org.elasticsearch.search.fetch.FetchPhase.execute_[j];org.apache.lucene.util.compress.LZ4.decompress_[i] 10
java.lang.Thread.run_[0];org.elasticsearch.search.fetch.FetchPhase.execute_[j];org.elasticsearch.xcontent.XContentBuilder.value_[j] 35
java.lang.Thread.run_[0];io.netty.channel.nio.NioEventLoop.run_[j];sun.nio.ch.SocketDispatcher.write0_[k] 25
"""
NO_SOURCE = """\
java.lang.Thread.run_[0];org.elasticsearch.search.fetch.FetchPhase.execute_[j];org.apache.lucene.util.compress.LZ4.decompress_[j] 15
java.lang.Thread.run_[0];io.netty.channel.nio.NioEventLoop.run_[j];sun.nio.ch.SocketDispatcher.write0_[k] 5
"""


def test_a_frame_is_one_frame_whatever_the_compiler_made_of_it():
    stacks = profiles.parse(FULL_SOURCE)
    assert stacks.samples == 100
    assert len(stacks.counts) == 3  # the JIT-compiled and the inlined decompress are one stack
    assert profiles.top_frames(stacks, 2) == [
        models.Frame(frame="org.apache.lucene.util.compress.LZ4.decompress", percent=40.0),
        models.Frame(frame="org.elasticsearch.xcontent.XContentBuilder.value", percent=35.0)]


def test_a_native_library_is_one_frame_whatever_folder_the_node_ran_from():
    """Without symbols a library is named by its path, which holds each run's own folder."""
    one = profiles.parse("java.lang.Thread.run;/tmp/esbench-es-9.2.4-2gc993b2/dist/lib/platform/libzstd.so 3\n")
    other = profiles.parse("java.lang.Thread.run;/tmp/esbench-es-9.2.4-7ab01c9e/dist/lib/platform/libzstd.so 5\n")
    assert one.self_samples() == {"libzstd.so": 3} and other.self_samples() == {"libzstd.so": 5}
    assert profiles.frame_name("/usr/lib/x86_64-linux-gnu/libc.so.6") == "libc.so.6"
    assert profiles.frame_name("ZSTD_decompress") == "ZSTD_decompress"


def test_a_share_counts_each_sample_whose_stack_holds_the_frame_once():
    stacks = profiles.parse(FULL_SOURCE)
    assert stacks.share(r"FetchPhase") == pytest.approx(0.75)
    assert stacks.share(r"LZ4\.decompress") == pytest.approx(0.4)
    assert stacks.share(r"Thread\.run") == pytest.approx(1.0)
    assert stacks.inclusive(r"LZ4\.decompress") == 40 and profiles.parse("").inclusive("x") == 0
    assert profiles.parse("").share("x") == 0.0


def test_changes_compare_shares_of_each_profile_own_samples():
    """The baseline has a fifth of the samples: counts alone would call every frame cheaper."""
    rows = profiles.changes(profiles.parse(NO_SOURCE), profiles.parse(FULL_SOURCE))
    by_frame = {row.frame: row for row in rows}
    assert rows[-1].frame == "sun.nio.ch.SocketDispatcher.write0"  # the largest moves first
    assert by_frame["org.elasticsearch.xcontent.XContentBuilder.value"].change == pytest.approx(35.0)
    assert by_frame["org.apache.lucene.util.compress.LZ4.decompress"].baseline_percent == pytest.approx(75.0)
    assert by_frame["org.apache.lucene.util.compress.LZ4.decompress"].change == pytest.approx(-35.0)
    assert by_frame["sun.nio.ch.SocketDispatcher.write0"].change == pytest.approx(0.0)  # 5 of 20, 25 of 100


def test_a_bounded_file_keeps_the_most_sampled_stacks_and_scales_for_a_diff():
    stacks = profiles.parse(FULL_SOURCE)
    kept = profiles.most_sampled(stacks, 2)
    assert kept.samples == 75 and len(kept.counts) == 2
    assert profiles.parse(profiles.to_text(stacks)) == stacks  # the file reads back as it was
    scaled = profiles.parse(profiles.to_text(profiles.parse(NO_SOURCE), samples=100))
    assert scaled.samples == 100 and max(scaled.counts.values()) == 75


def test_the_cpu_event_is_a_cpu_time_timer_with_its_interval():
    assert asyncprofiler.SAMPLING[models.ProfileEvent.CPU].event == "ctimer"
    assert asyncprofiler.interval(models.Profile()) == "10ms"
    assert asyncprofiler.interval(models.Profile(event="wall", intervalMillis=20)) == "20ms"
    assert asyncprofiler.interval(models.Profile(event="alloc")) is None  # async-profiler's own default
