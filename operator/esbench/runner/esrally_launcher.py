"""esrally, with its actors polling for finished work every half second instead of every five,
and its shutdown waiting as long.

Run by esrally's own interpreter (`python esrally_launcher.py race ...`), never imported by
esbench: it needs Rally's virtualenv. Rally's workers and track-preparation executors look for a
finished task on a fixed wake-up interval, so each of a race's join points and preparation
rounds costs up to that interval, however short its task (a delete-index, a create-index, a
health check). Rally's test mode already polls every half second; this launcher applies the same
interval to every race. Rally forks its actors, so the patched classes reach all of them.
After a race, Rally's main process sleeps three seconds "for outstanding messages" before it
shuts its actor system down, then checks every second that it is gone: by then the race's
results are written and every actor has been told to exit (the shutdown ends them anyway), so
those sleeps are capped at the same half second. And Thespian's TCP transport walks its pending
transmits on the actor's thread while other threads add to them (a log record sent from one of
Rally's executor threads): the walk can fail with "dictionary changed size during iteration",
which ends the actor, and Rally aborts the race ("Worker [0] has exited prematurely"; Thespian
issue 68, open in 4.0.1, the version esrally 2.13 pins). Those walks go over a copy here. The
file name keeps "esrally" on the command line, where Rally (and the runner) look for Rally
processes.

Rally's race.json keeps no request of a task, only its percentiles; its in-memory metrics store
holds every one until the race ends. At the end of a race the coordinator writes each task's
measured samples (service time, latency and throughput, against the task's relative time) to the
file named by ESBENCH_SAMPLES_FILE, for the runner to find each task's steady state. A store that
is not Rally's in-memory one (an Elasticsearch metrics store, set in rally.ini) has no such list,
and no file is written: the runner says so.
"""

import gzip
import json
import logging
import os
import sys
import time

from esrally import racecontrol, rally
from esrally.driver import driver
from thespian.system.transport import TCPTransport

POLL_SECONDS = 0.5

driver.Worker.WAKEUP_INTERVAL_SECONDS = POLL_SECONDS
_executor_init = driver.TaskExecutionActor.__init__


def _polling_executor_init(self):
    _executor_init(self)
    self.wakeup_interval = POLL_SECONDS


driver.TaskExecutionActor.__init__ = _polling_executor_init


class _CappedSleeps:
    """The `time` module as rally.py (its main process only) sees it, with shorter sleeps."""

    def __getattr__(self, name):
        return getattr(time, name)

    @staticmethod
    def sleep(seconds):
        time.sleep(min(seconds, POLL_SECONDS))


rally.time = _CappedSleeps()


class _CopiedWhenWalked(dict):
    """Pending transmits by socket, each walk over a copy made at once (a C-level copy, which no
    other thread interrupts)."""

    def __iter__(self):
        return iter(list(dict.keys(self)))

    def keys(self):
        return list(dict.keys(self))

    def values(self):
        return list(dict.values(self))

    def items(self):
        return list(dict.items(self))


def _transmits(transport):
    try:
        return transport.__dict__["_esbench_transmits"]
    except KeyError:
        raise AttributeError("_transmitIntents") from None  # hasattr() asks before the first


def _set_transmits(transport, transmits):
    transport.__dict__["_esbench_transmits"] = _CopiedWhenWalked(transmits)


def _delete_transmits(transport):
    if transport.__dict__.pop("_esbench_transmits", None) is None:
        raise AttributeError("_transmitIntents")


# A property, as the transport also replaces the whole dict with a new one.
TCPTransport.TCPTransport._transmitIntents = property(_transmits, _set_transmits, _delete_transmits)

SAMPLES_FILE = "ESBENCH_SAMPLES_FILE"  # runner/requestsamples.py's ENVIRONMENT
SAMPLED = ("service_time", "latency", "throughput")
LAG = "schedule_lag"  # ms a request started after its scheduled time: its latency less its service time


def request_samples(docs):
    """Per task and figure, its measured samples as {unit, seconds, values}, and each request's
    schedule lag (Rally keeps a request's latency and service time apart, told by its client and
    time); Rally's warm-up samples are left out, as from its own figures."""
    tasks = {}
    timings = {}  # (task, client, relative time) -> {figure: ms}
    for doc in docs:
        if doc.get("name") not in SAMPLED or doc.get("sample-type") != "normal" or "task" not in doc:
            continue
        series = tasks.setdefault(doc["task"], {}).setdefault(
            doc["name"], {"unit": doc.get("unit"), "seconds": [], "values": []})
        series["seconds"].append(doc["relative-time"] / 1000)  # Rally stores milliseconds
        series["values"].append(doc["value"])
        if doc["name"] != "throughput":
            request = (doc["task"], (doc.get("meta") or {}).get("client_id"), doc["relative-time"])
            timings.setdefault(request, {})[doc["name"]] = doc["value"]
    for (task, _, relative_time), timing in sorted(timings.items(), key=lambda item: item[0][2]):
        if len(timing) == 2:
            lag = tasks[task].setdefault(LAG, {"unit": "ms", "seconds": [], "values": []})
            lag["seconds"].append(relative_time / 1000)
            lag["values"].append(timing["latency"] - timing["service_time"])
    return tasks


_on_benchmark_complete = racecontrol.BenchmarkCoordinator.on_benchmark_complete


def _on_benchmark_complete_keeping_samples(self, new_metrics):
    _on_benchmark_complete(self, new_metrics)
    path = os.environ.get(SAMPLES_FILE)
    docs = getattr(self.metrics_store, "docs", None)  # closing the in-memory store keeps them
    if not path or docs is None:
        return
    try:
        with gzip.open(path, "wt") as samples:
            json.dump({"tasks": request_samples(docs)}, samples)
    except (OSError, TypeError, ValueError, KeyError):  # the race's own results stand without them
        logging.getLogger(__name__).exception("esbench: the request samples could not be written to [%s]", path)


racecontrol.BenchmarkCoordinator.on_benchmark_complete = _on_benchmark_complete_keeping_samples

if __name__ == "__main__":
    sys.exit(rally.main())
