"""End to end: an ExperimentSchedule on a real Kubernetes with the real ECK operator: its runs start
on their ticks, and never two at once (concurrencyPolicy Forbid, the default).

Real: as test_e2e.py. The schedule ticks every minute. Its run asks for more memory than the node
has, so ECK's pod stays Pending and the run fails at its clusterReadyTimeoutSeconds, 75 s after its
tick: the next tick always comes while it is under way, and must wait for it (a race would end
before or after the next tick depending on the machine).
"""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from esbench.api import models
from esbench.api.models import SCHEDULED_AT
from tests.e2e.test_e2e import POLL_SECONDS, Experiments, quickstart
from tests.support.waiting import wait_for

READY_TIMEOUT = 75


@pytest.fixture
def scheduled(cluster, operator, restricted_namespace) -> Experiments:
    return Experiments(cluster, restricted_namespace, operator["namespace"])


def moment(text: str) -> datetime:
    return datetime.fromisoformat(text)


def test_a_schedules_runs_start_on_their_ticks_and_never_two_at_once(cluster, scheduled):
    spec = quickstart(cluster, test_mode=True)["spec"]
    spec["elasticsearch"]["resources"] = {"requests": {"cpu": "1", "memory": "200Gi"}, "limits": {"memory": "200Gi"}}
    spec["lifecycle"] = {"clusterReadyTimeoutSeconds": READY_TIMEOUT}
    scheduled.custom.create_namespaced_custom_object(
        models.GROUP, models.VERSION, scheduled.namespace, models.SCHEDULE_PLURAL,
        {"apiVersion": models.API_VERSION, "kind": models.SCHEDULE_KIND, "metadata": {"name": "minutely"},
         "spec": {"schedule": "* * * * *", "experiment": spec}})
    seen = {"most at once": 0, "waiting": False}

    def runs(count: int) -> list[dict] | None:
        found = scheduled.custom.list_namespaced_custom_object(
            models.GROUP, models.VERSION, scheduled.namespace, models.PLURAL,
            label_selector=f"{models.SCHEDULE_LABEL}=minutely")["items"]
        under_way = [r for r in found if (r.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]
        seen["most at once"] = max(seen["most at once"], len(under_way))
        status = scheduled.custom.get_namespaced_custom_object(
            models.GROUP, models.VERSION, scheduled.namespace, models.SCHEDULE_PLURAL, "minutely").get("status") or {}
        seen["waiting"] |= status.get("reason") == "Waiting"
        return sorted(found, key=lambda r: r["metadata"]["creationTimestamp"]) if len(found) >= count else None

    (first,) = wait_for(lambda: runs(1), 90, what="the first tick's run", interval=POLL_SECONDS,
                        diagnose=scheduled.diagnose)
    tick = moment(first["metadata"]["annotations"][SCHEDULED_AT])
    assert tick.second == 0
    assert timedelta(0) <= moment(first["metadata"]["creationTimestamp"]) - tick < timedelta(seconds=15)
    # ECK made the cluster, whose pod cannot be scheduled.
    wait_for(lambda: scheduled.elasticsearches(), 60, what="ECK's cluster of the first run", interval=POLL_SECONDS)

    _, second = wait_for(lambda: runs(2), READY_TIMEOUT + 90, what="the next tick's run", interval=POLL_SECONDS,
                         diagnose=scheduled.diagnose)
    first = scheduled.get(first["metadata"]["name"])
    assert first["status"]["phase"] == "Failed" and first["status"]["reason"] == "ClusterNotReady", first["status"]
    ended = moment(first["status"]["completionTime"])
    name = first["metadata"]["name"]
    late = ended - moment(first["metadata"]["creationTimestamp"]) - timedelta(seconds=READY_TIMEOUT)
    assert late < timedelta(seconds=15), "\n".join(
        line for line in scheduled.operator_log().splitlines() if name in line or "resync" in line)
    started = moment(second["metadata"]["creationTimestamp"])
    its_tick = moment(second["metadata"]["annotations"][SCHEDULED_AT])
    # The next tick came while the first run was under way, waited, and started as soon as it ended.
    assert tick < its_tick < ended <= started < ended + timedelta(seconds=15)
    assert seen == {"most at once": 1, "waiting": True}
    print(f"first run: tick {tick:%H:%M:%S}, failed {ended:%H:%M:%S}; second: tick {its_tick:%H:%M:%S}, "
          f"created {started:%H:%M:%S}")
    scheduled.custom.delete_namespaced_custom_object(models.GROUP, models.VERSION, scheduled.namespace,
                                                     models.SCHEDULE_PLURAL, "minutely")
