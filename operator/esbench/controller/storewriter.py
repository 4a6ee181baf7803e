"""Finished Experiments and sweeps into the results store, once, and their Recorded condition:
what the store holds is said on the object, and an outage is said once, not at every retry."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from esbench.api.reasons import ConditionType, Reason
from esbench.history.esstore import StoreUnavailable
from esbench.planning import status
from esbench.planning.status import ConditionUpdate

T = TypeVar("T")


def record_in_store(body: dict[str, Any], write: Callable[[], None], where: str,
                    emit: Callable[[dict[str, Any], str, str, str], None],
                    set_condition: Callable[[ConditionUpdate], T]) -> T:
    """WRITE the finished object to the results store, and say how that went: its Recorded
    condition and an Event (a Warning once per outage). Raises StoreUnavailable once said."""
    try:
        write()
    except StoreUnavailable as error:
        message = f"Not written to the results store yet: {error}"
        before = status.condition(body.get("status") or {}, ConditionType.RECORDED)
        if not before or before["reason"] != Reason.STORE_UNAVAILABLE:
            emit(body, "Warning", Reason.STORE_UNAVAILABLE, message)
        set_condition((ConditionType.RECORDED, False, Reason.STORE_UNAVAILABLE, message))
        raise
    message = f"Recorded in the results store {where}"
    emit(body, "Normal", Reason.RECORDED, message)
    return set_condition((ConditionType.RECORDED, True, Reason.RECORDED, message))
