"""The launcher's patches, as esrally's own interpreter loads them (Rally's virtualenv, its pinned Thespian)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from esbench.runner import race as race_module

LAUNCHER = Path(race_module.__file__).with_name("esrally_launcher.py")

# What Thespian's transport does with its pending transmits while another thread sends: it walks
# them (here by keys, values and items) and, meanwhile, a transmit is added. The additions stand in
# for the other thread's: a dict walked this way fails at once, as the real one fails now and then.
WALKS = f"""
import importlib.util, sys
spec = importlib.util.spec_from_file_location("launcher", {str(LAUNCHER)!r})
spec.loader.exec_module(importlib.util.module_from_spec(spec))
from thespian.system.transport.TCPTransport import TCPTransport
transport = TCPTransport.__new__(TCPTransport)
assert not hasattr(transport, "_transmitIntents")
transport._transmitIntents = {{3: "a"}}
def add():
    transport._transmitIntents[len(transport._transmitIntents) + 10] = "added meanwhile"
for _ in transport._transmitIntents:
    add()
for _ in transport._transmitIntents.keys():
    add()
for _ in transport._transmitIntents.values():
    add()
for _ in transport._transmitIntents.items():
    add()
transport._transmitIntents = dict(transport._transmitIntents)  # the transport replaces the whole dict
for _ in transport._transmitIntents.values():
    add()
print(len(transport._transmitIntents))
del transport._transmitIntents
print(hasattr(transport, "_transmitIntents"))
"""


def test_thespians_pending_transmits_may_grow_while_the_transport_walks_them(esrally):
    python = Path(esrally).with_name("python")
    done = subprocess.run([str(python), "-c", WALKS], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["32", "False"]  # 1 + 1 + 2 + 4 + 8, then 16 more


# Rally's in-memory metrics store as the coordinator leaves it at a race's end: what the launcher
# keeps of it for the runner's steady states.
SAMPLES = f"""
import importlib.util, json
spec = importlib.util.spec_from_file_location("launcher", {str(LAUNCHER)!r})
launcher = importlib.util.module_from_spec(spec)
spec.loader.exec_module(launcher)
def doc(name, sample_type, ms, value, task="search", client=0):
    return {{"name": name, "sample-type": sample_type, "relative-time": ms, "value": value, "unit": "ms", "task": task,
             "meta": {{"client_id": client}}}}
docs = [doc("service_time", "warmup", 100, 9.0), doc("latency", "warmup", 100, 19.0),
        doc("service_time", "normal", 1500, 2.0), doc("latency", "normal", 1500, 2.5),
        doc("processing_time", "normal", 1500, 2.1), doc("throughput", "normal", 2000, 40.0),
        doc("latency", "normal", 1500, 9.0, client=1), doc("service_time", "normal", 1500, 3.0, client=1),
        doc("latency", "normal", 1200, 4.0, client=2), doc("service_time", "normal", 1200, 4.0, client=2),
        {{"name": "node_total_young_gen_gc_time", "value": 1}}]
print(json.dumps(launcher.request_samples(docs), sort_keys=True))
"""


def test_the_launcher_keeps_each_tasks_measured_requests_of_rallys_metrics_store(esrally):
    python = Path(esrally).with_name("python")
    done = subprocess.run([str(python), "-c", SAMPLES], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    kept = json.loads(done.stdout)["search"]
    assert kept["service_time"] == {"unit": "ms", "seconds": [1.5, 1.5, 1.2], "values": [2.0, 3.0, 4.0]}  # no warm-up
    assert kept["latency"]["values"] == [2.5, 9.0, 4.0] and kept["throughput"]["seconds"] == [2.0]
    assert "processing_time" not in kept
    # Each request's lag behind its schedule, told apart by its client, in time order.
    assert kept["schedule_lag"] == {"unit": "ms", "seconds": [1.2, 1.5, 1.5], "values": [0.0, 0.5, 6.0]}
