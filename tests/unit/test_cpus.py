"""Elasticsearch and Rally on different CPUs (localnode.cpus)."""

import os
import subprocess
import sys

from esbench.localnode import cpus


def test_rally_gets_a_quarter_of_the_cpus_at_least_one_and_the_node_the_rest():
    assert cpus.split({0}) is None
    assert cpus.split({1, 0}) == cpus.CpuSplit(rally=(0,), elasticsearch=(1,))
    assert cpus.split(set(range(8))) == cpus.CpuSplit(rally=(0, 1), elasticsearch=(2, 3, 4, 5, 6, 7))
    assert cpus.split({3, 5, 7}).describe() == "Elasticsearch on CPU 5, 7, Rally and esbench on CPU 3"


def test_a_process_started_on_cpus_keeps_them_and_the_caller_gets_its_own_back():
    mine = os.sched_getaffinity(0)
    one = (min(mine),)
    with cpus.on_cpus(one):
        child = subprocess.run([sys.executable, "-c", "import os; print(sorted(os.sched_getaffinity(0)))"],
                               capture_output=True, text=True, check=True)
    assert child.stdout.strip() == str(list(one))
    assert os.sched_getaffinity(0) == mine
