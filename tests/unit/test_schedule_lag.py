"""Whether a capacity probe held its rate (analysis/capacitysearch.lag_growth), against a simulated
Rally driver whose answer is known.

The driver is Rally's at a target throughput: each of `clients` clients sends every clients / rate
seconds, its first request one interval in (Rally's deterministic schedule), and waits for each
answer before it sends again, late if its answer came after the next one was due. The node serves
two requests at once (a 2-core node's search threads), each a log-normal time (CV 50 %) around
its capacity's, slower by 5 % from the probe's start to its end (the host drifts); one in every
fourteen seconds or so it stops for 0.5 to 3 s (a GC pause, a neighbour on the host), and the
requests it holds finish that much later. A probe is Rally's: WARMUP_SECONDS, then PROBE_SECONDS
measured.

Rally's throughput is modelled as a running count: each second, the requests completed since the
clients' start over the time since then; its figure is the median of the measured seconds'. (Rally
evaluates it at requests rather than at whole seconds; the model reads 23.5 ops/s from 32 clients
at a median of 93.6 %, and a real 300m node's probes read 93.6 to 96.6 %.)
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

import numpy as np

from esbench.analysis import capacitysearch

PROBES = 200  # per case: a share of 97 % is then measured within about +-1.2 points
WARMUP_SECONDS, PROBE_SECONDS = 5.0, 15.0
WORKERS = 2
CV = 0.5
DRIFT = 0.05  # slower at the probe's end than at its start
PAUSES_PER_SECOND = 0.07
PAUSE_SECONDS = (0.5, 3.0)


@dataclass(frozen=True)
class Request:
    scheduled: float  # s since the clients' start
    start: float
    end: float

    @property
    def lag(self) -> float:
        return self.start - self.scheduled


def probe(rng: np.random.Generator, rate: float, clients: int, capacity: float) -> list[Request]:
    """The probe's requests, its warm-up's included, in the order they started."""
    ends_at = WARMUP_SECONDS + PROBE_SECONDS
    interval = clients / rate
    pauses, moment = [], rng.exponential(1 / PAUSES_PER_SECOND)
    while moment < ends_at:
        pauses.append((moment, rng.uniform(*PAUSE_SECONDS)))
        moment += rng.exponential(1 / PAUSES_PER_SECOND)
    sigma = math.sqrt(math.log(1 + CV**2))
    due = [(interval, client, 1) for client in range(clients)]  # (when the client sends, client, request number)
    heapq.heapify(due)
    free = [0.0] * WORKERS  # when each of the node's threads is free
    requests = []
    while due:
        start, client, number = heapq.heappop(due)
        if start >= ends_at:
            continue
        worker = int(np.argmin(free))
        begin = max(start, free[worker])
        slower = 1 + DRIFT * begin / ends_at
        end = begin + WORKERS / capacity * slower * rng.lognormal(-sigma**2 / 2, sigma)
        end += sum(length for at, length in pauses if begin <= at < end or at <= begin < at + length)
        free[worker] = end
        requests.append(Request(scheduled=number * interval, start=start, end=end))
        heapq.heappush(due, (max((number + 1) * interval, end), client, number + 1))
    return requests


def rallys_throughput(requests: list[Request]) -> float:
    """Rally's median throughput: each measured second, the requests completed since the clients'
    start (the warm-up's too) over the time since then."""
    ends = np.sort([r.end for r in requests])
    seconds = np.arange(WARMUP_SECONDS + 1, WARMUP_SECONDS + PROBE_SECONDS + 1)
    return float(np.median(np.searchsorted(ends, seconds) / seconds))


def measured(requests: list[Request]) -> list[Request]:
    return [r for r in requests if r.start >= WARMUP_SECONDS]


def lag_growth(requests: list[Request]) -> float | None:
    kept = measured(requests)
    return capacitysearch.lag_growth([r.start for r in kept], [1000 * r.lag for r in kept])


def least_squares_lag_growth(requests: list[Request]) -> float:
    """The safeguard removed: a straight line through every request's lag, not through runs' medians."""
    kept = measured(requests)
    return float(np.polyfit([r.start for r in kept], [r.lag for r in kept], 1)[0])


def held_share(growths: list[float | None]) -> float:
    return sum(g is not None and g <= capacitysearch.SHORTFALL for g in growths) / len(growths)


def test_a_low_rate_many_clients_hold_is_held_though_rallys_throughput_reads_it_short():
    """32 clients at 23.5 ops/s on a node that serves 400 (the 300m node of bench/results.md, whose
    probes Rally read at 94 to 97 % of their rate with a flat lag): 99 % of probes or more hold (a
    pause of seconds near the end may fail one); the running count reads 95 % of them more than 5 %
    short, the rule the lag's growth replaces."""
    rng = np.random.default_rng(1)
    probes = [probe(rng, 23.5, 32, 400.0) for _ in range(PROBES)]
    assert held_share([lag_growth(p) for p in probes]) >= 0.99
    short = [rallys_throughput(p) < 23.5 * (1 - capacitysearch.SHORTFALL) for p in probes]
    assert sum(short) / PROBES >= 0.95


def test_the_lag_growth_tells_a_rate_held_through_pauses_from_one_the_node_fell_behind():
    """At 30 and 50 % of the capacity, 98 % of probes or more hold despite pauses of up to 3 s; the
    least-squares line through every request's lag (the safeguard removed) fails 5 % or more of
    them: a pause near the probe's end tilts it. At 110 % and more every probe fails. (At 70 %,
    nearer the capacity that pauses and drift leave, about 8 % fail.)"""
    rng = np.random.default_rng(2)
    for share in (0.3, 0.5):
        probes = [probe(rng, share * 200.0, 32, 200.0) for _ in range(PROBES)]
        assert held_share([lag_growth(p) for p in probes]) >= 0.98, share
        assert held_share([least_squares_lag_growth(p) for p in probes]) <= 0.95, share
    for share in (1.1, 1.5):
        probes = [probe(rng, share * 200.0, 32, 200.0) for _ in range(PROBES // 4)]
        assert held_share([lag_growth(p) for p in probes]) == 0.0, share


def test_the_lag_growth_is_the_share_of_the_rate_not_sent():
    """Past its capacity the node sends capacity / rate of it: the lag grows by the rest a second."""
    rng = np.random.default_rng(3)
    for share in (1.25, 2.0):
        growths = [lag_growth(probe(rng, share * 200.0, 32, 200.0)) for _ in range(20)]
        # The node's own drift and pauses make it send a little less than its capacity.
        assert 1 - 1 / share <= np.median(growths) <= 1 - 1 / share + 0.08, share


def test_too_few_requests_tell_no_growth():
    assert capacitysearch.lag_growth([1.0], [5.0]) is None
    assert capacitysearch.lag_growth([1.0, 1.0], [5.0, 7.0]) is None
    assert capacitysearch.lag_growth([1.0, 2.0], [0.0, 100.0]) == 0.1
