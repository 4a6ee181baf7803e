"""Per-object locks of the reconcilers: one per object while in use, gone once no one uses it."""

import threading
import weakref

from esbench.controller.reconciling import KeyedLocks


def test_one_lock_per_object_while_it_is_held_or_awaited():
    locks = KeyedLocks()
    held = locks(("perf", "a"))
    with held:
        assert locks(("perf", "a")) is held and locks(("perf", "b")) is not held
        acquired = []
        waiting = threading.Thread(target=lambda: acquired.append(locks(("perf", "a")).acquire(timeout=0.2)))
        waiting.start()
        waiting.join()
        assert acquired == [False], "a second reconcile of the object waits for the first"


def test_a_lock_no_one_holds_is_dropped():
    locks = KeyedLocks()
    unused = weakref.ref(locks(("perf", "gone")))
    assert unused() is None
