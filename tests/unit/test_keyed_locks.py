"""Per-object locks of the reconcilers: one per object, dropped once the object is gone."""

from esbench.controller.lifecycle import KeyedLocks


def test_one_lock_per_object_until_it_is_forgotten():
    locks = KeyedLocks()
    first = locks(("perf", "a"))
    assert locks(("perf", "a")) is first and locks(("perf", "b")) is not first
    locks.forget(("perf", "a"))
    locks.forget(("perf", "never-seen"))  # harmless
    assert locks(("perf", "a")) is not first
