"""How a capacity search's answer is shown: esbench show's Capacity table and esbench report's curve."""

from __future__ import annotations

import dataclasses

from rich.console import Console

from esbench.analysis import charts, html_report
from esbench.analysis.compare import Entry
from esbench.api import models
from esbench.cli import rendering

DRIVER = "4 client(s) at a median service time of 3.4 ms send at most 1,176.5 ops/s: raise workload.load.clients"


def probe(rate: float, p99: float, verdict: str | None, achieved: float | None = None, driver: str | None = None,
          behind: float | None = 0.4) -> models.CapacityProbe:
    """A probe whose percentiles are fractions of its latency p99, each told apart by its digits."""
    latency = models.Percentiles(p50=p99 / 4, p90=p99 / 2, p99=p99, p100=p99 * 3, unit="ms")
    service = models.Percentiles(p50=p99 / 8, p90=p99 / 5, p99=p99 / 1.25, p100=p99 * 2, unit="ms")
    return models.CapacityProbe(target_throughput=rate, throughput=achieved or rate, lag_growth_percent=behind,
                                latency=latency,
                                service_time=service, error_rate=0.0, node_cpu_percent=min(rate / 10, 99.0),
                                disk_read_bytes_per_second=rate * 2**18,
                                verdict=verdict, driver=driver, seconds=40.0)


def result(metric: str = "latency.p99", **changes) -> models.CapacityResult:
    """Grown to 800 (failed), bisected, both ends confirmed; then a probe the driver limited."""
    probes = [probe(100, 12.0, "Passed"), probe(200, 16.0, "Passed"), probe(400, 32.0, "Passed"),
              probe(800, 2960.0, "Failed", achieved=611, behind=23.6), probe(565.7, 120.0, "Passed"),
              probe(672.7, 264.0, "Failed"), probe(616.8, 180.0, "Passed"), probe(644.1, 232.0, "Failed"),
              probe(616.8, 176.0, "Passed"), probe(644.1, 212.0, "Failed"),
              probe(1280, 40.0, "DriverLimited", achieved=1100, driver=DRIVER)]
    found = {"task": "range-1950s", "objective": f"{metric} <= 200 ms, errors <= 0.00%", "metric": metric,
             "max_milliseconds": 200.0, "capacity": 616.8, "upper": 644.1, "confirmations": 1, "stop": "Converged",
             "message": "616.8 ops/s held, 644.1 ops/s failed (11 probes): the bracket is within the precision",
             "seconds": 470.0, "probes": probes}
    return models.CapacityResult(**{**found, **changes})


def shown(capacity: models.CapacityResult) -> str:
    task = models.TaskResult(task="range-1950s", throughput=models.Throughput(median=50, unit="ops/s"))
    console = Console(width=100, record=True)
    for table in rendering.results_tables(models.Results(race_id="r", tasks=[task], capacity=capacity)):
        console.print(table)
    return console.export_text()


def test_show_prints_each_probe_in_the_order_made_then_the_answer_within_100_columns():
    text = shown(result())
    lines = text[text.index("Capacity of range-1950s under latency.p99 <= 200 ms"):].splitlines()
    assert "…" not in "\n".join(lines), "nothing cut short"
    assert lines[1].split() == ["lat", "lat", "svc", "svc"]
    assert lines[2].split() == ["offered", "achieved", "behind", "p99*", "p50", "p50", "p99", "errors", "CPU", "read",
                                "verdict"], "the objective's percentile first, marked; no JIT column where none is known"
    rows = [line.split() for line in lines[4:15]]
    assert [row[0] for row in rows] == ["100", "200", "400", "800", "565.7", "672.7", "616.8", "644.1", "616.8",
                                        "644.1", "1,280"]
    assert rows[3] == ["800", "611", "23.6%", "2,960", "740", "370", "2,368", "0.00%", "80.0%", "200", "Failed"]
    assert rows[-1][-1] == "DriverLimited"
    caption = " ".join(" ".join(line.split()) for line in lines[15:])
    assert "capacity 616.8 ops/s, bracket [616.8, 644.1]; stop Converged; confirmations 1" in caption
    assert "search 7m50s (40s a probe): 616.8 ops/s held, 644.1 ops/s failed (11 probes)" in caption
    assert f"driver-limited at 1,280 ops/s: {DRIVER}" in caption
    assert "CPU: the nodes' mean; read: their disks' MiB/s" in caption
    unread = shown(result(probes=[p.model_copy(update={"disk_read_bytes_per_second": None}) for p in result().probes]))
    assert "read" not in unread[unread.index("Capacity of"):].splitlines()[2].split(), "a run file from before: no column"
    assert max(len(line.rstrip()) for line in text.splitlines()) <= 100


def test_show_prints_the_warm_up_first_unjudged_and_says_whether_the_node_became_steady():
    flat_out = [probe(100, 40.0, None, achieved=250, behind=None), probe(100, 14.0, None, achieved=700, behind=None)]
    text = shown(result(warmup=[p.model_copy(update={"target_throughput": None}) for p in flat_out], steady=False))
    lines = text[text.index("Capacity of range-1950s"):].splitlines()
    rows = [line.split() for line in lines[4:17]]
    assert [row[:4] + row[-1:] for row in rows[:3]] == [["–", "250", "–", "40.0", "warm-up"],
                                                       ["–", "700", "–", "14.0", "warm-up"],
                                                       ["100", "100", "0.4%", "12.0", "Passed"]]
    caption = " ".join(" ".join(line.split()) for line in lines[17:])
    assert "confirmations 1; warm-up 2 probes, still getting faster" in caption
    assert "warm-up none" in " ".join(shown(result()).split())


def test_show_fits_100_columns_with_a_p100_objective_and_says_when_no_rate_held():
    """With the JIT compilers' share too (a local node's)."""
    large = [probe(100, 60_000.0, "Failed"), probe(100, 61_000.0, "Failed"),
             probe(12_800, 950.0, "DriverLimited", driver=DRIVER)]
    large[0].jit_share_percent = 38.6
    text = shown(result("service_time.p100", capacity=None, upper=100.0, stop="BelowRange", probes=large))
    held = text[text.index("Capacity of"):]
    assert "…" not in held and max(len(line.rstrip()) for line in text.splitlines()) <= 100
    kinds, header = held.splitlines()[1:3]
    assert kinds.split() == ["svc", "lat", "lat", "svc", "svc"]
    assert header.split()[3:8] == ["p100*", "p50", "p99", "p50", "p99"]
    assert header.split()[-4:] == ["CPU", "read", "JIT", "verdict"]
    assert held.splitlines()[4].split()[-3:] == ["25.0", "39%", "Failed"]
    assert "JIT: its JIT compilers' share" in " ".join(held.split())
    assert held.splitlines()[4].split()[3:6] == ["120k", "15k", "60k"], "ms in thousands from 10 s on"
    assert "capacity – ops/s, bracket [–, 100]; stop BelowRange" in held


def entry(label: str, capacity: models.CapacityResult | None) -> Entry:
    task = models.TaskResult(task="range-1950s", throughput=models.Throughput(median=50, unit="ops/s"))
    return Entry(label=label, results=models.Results(tasks=[task], capacity=capacity))


def test_the_report_draws_each_percentile_against_the_offered_rate_with_the_bound_and_the_capacity():
    lower = result(capacity=400.0, upper=420.0, probes=[probe(200, 20.0, "Passed"), probe(400, 150.0, "Passed"),
                                                         probe(420, 230.0, "Failed"), probe(400, 170.0, "Passed")])
    chart = charts.capacity([entry("one-shard", result()), entry("no-search", None), entry("two-shards", lower)])
    objective, counterpart, latency_p50, service_p50 = chart.figure.axes[:4]
    assert [ax.get_title() for ax in (objective, counterpart, latency_p50, service_p50)] == [
        "latency.p99 (objective)", "service_time.p99", "latency.p50", "service_time.p50"]
    curve, bound, marked, other_curve, other_bound, other_marked = objective.lines
    # Confirmations are dots at one rate; the line joins the medians in rate order, the driver's probe left out.
    assert list(curve.get_xdata()) == [100, 200, 400, 565.7, 616.8, 644.1, 672.7, 800]
    assert list(curve.get_ydata()) == [12, 16, 32, 120, 178, 222, 264, 2960]
    assert list(other_curve.get_xdata()) == [200, 400, 420] and list(other_curve.get_ydata()) == [20, 160, 230]
    assert list(bound.get_ydata()) == [200, 200] and list(marked.get_xdata()) == [616.8, 616.8]
    assert list(other_marked.get_xdata()) == [400, 400]
    assert curve.get_color() != other_curve.get_color(), "one colour per Experiment"
    held, limited = objective.collections[:2]
    assert len(held.get_offsets()) == 10 and len(held.get_facecolors()) == 1
    assert [tuple(p) for p in limited.get_offsets()] == [(1280, 40)] and len(limited.get_facecolors()) == 0
    assert len(counterpart.lines) == 4, "the bound is drawn on the objective's percentile only"
    assert objective.get_xscale() == "log" and objective.get_yscale() == "log"
    # Below the percentiles, what the nodes spent at each rate: where the curve breaks, CPU or disk at its limit.
    cpu, disk = chart.figure.axes[4:6]
    assert (cpu.get_title(), cpu.get_ylabel(), disk.get_title(), disk.get_ylabel()) == (
        "node CPU", "%", "disk read", "MiB/s")
    assert list(cpu.lines[0].get_ydata())[:3] == [10, 20, 40] and list(disk.lines[0].get_ydata())[:3] == [25, 50, 100]
    assert len(disk.lines) == 4 and disk.get_yscale() == "linear", "no bound: the capacity marked, on a linear scale"
    chart.close()
    unspent = result(probes=[p.model_copy(update={"disk_read_bytes_per_second": None}) for p in result().probes])
    chart = charts.capacity([entry("before", unspent)])
    assert [ax.get_title() for ax in chart.figure.axes if ax.get_visible()][4:] == ["node CPU"], "none drawn empty"
    chart.close()
    assert charts.capacity([entry("no-search", None)]) is None


def test_a_sweeps_searches_are_coloured_by_cell_and_the_legend_says_what_each_cell_sets():
    def run(cell, capacity):
        found = result(capacity=capacity, upper=capacity * 1.1, probes=[probe(capacity, 100.0, "Passed"),
                                                                        probe(capacity * 1.1, 2000.0, "Failed")])
        return dataclasses.replace(entry(f"{cell}-run", found), cell=f"sweep {cell}",
                                   annotations={models.CELL_LABEL: f'index.codec="{cell}"'})

    chart = charts.capacity([run("c0", 100.0), run("c1", 40.0), run("c0", 80.0)])
    curves = [line for line in chart.figure.axes[0].lines if line.get_linestyle() == "-"]  # not the bound, the capacity
    first, other, again = curves
    assert first.get_color() == again.get_color() != other.get_color(), "one colour per cell"
    assert [t.get_text() for t in chart.figure.legends[0].get_texts()] == [
        'c0 index.codec="c0" (2 searches)', 'c1 index.codec="c1" (1 search)']
    chart.close()


def test_the_report_of_results_with_a_capacity_charts_it():
    report = html_report.build([entry("one-shard", result())])
    assert [c.name for c in report.charts][0] == "capacity"
    assert "Capacity of range-1950s" in html_report.to_html(report)
