"""List, then watch from the list's resourceVersion, and relist when the watch fails.

What client-go's reflector does, for the stand-ins and the benchmark's observer: a watch that
ends at its server-side timeout resumes from the last resourceVersion seen; one the API server
ends with an error (410 Gone, 504 "Too large resource version" while its watch cache catches
up) or a dropped connection starts over with a fresh list, so no event is lost and no thread
dies. Objects are the API server's JSON (dicts).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from kubernetes import watch

from .answers import read_json

logger = logging.getLogger(__name__)

Handler = Callable[[str, dict[str, Any]], None]


def reflect(list_call: Callable[..., Any], *args: Any, on_event: Handler, stopping: threading.Event,
            name: str, timeout_seconds: int = 5, **kwargs: Any) -> None:
    """Call on_event(type, object) for every listed object (as ADDED) and every watch event
    until `stopping` is set. `timeout_seconds` bounds how long stop takes to be noticed."""
    while not stopping.is_set():
        try:
            listed = read_json(list_call, *args, **kwargs)
            for item in listed["items"]:
                on_event("ADDED", item)
            version = listed["metadata"]["resourceVersion"]
            while not stopping.is_set():
                # return_type "object": the JSON as dicts, without building the client's model
                # classes for every Pod or Job first (most of a busy watch's CPU otherwise). Not
                # deserialize=False: the client's own ERROR-event path (which raises ApiException
                # for 410/504) reads raw_object, which only the unmarshalling path adds.
                events = watch.Watch(return_type="object").stream(
                    list_call, *args, resource_version=version, allow_watch_bookmarks=True,
                    timeout_seconds=timeout_seconds, **kwargs)
                for event in events:
                    item = event["raw_object"]
                    version = item["metadata"]["resourceVersion"]
                    if event["type"] != "BOOKMARK":
                        on_event(event["type"], item)
        except Exception as error:  # the watch failed or the API server is unreachable: relist
            if not stopping.is_set():
                logger.info("%s: watch ended (%s), relisting", name, error)
                stopping.wait(0.2)


def start(list_call: Callable[..., Any], *args: Any, on_event: Handler, stopping: threading.Event,
          name: str, **kwargs: Any) -> threading.Thread:
    """reflect() on a daemon thread of its own."""
    thread = threading.Thread(target=reflect, args=(list_call, *args), name=name, daemon=True,
                              kwargs={"on_event": on_event, "stopping": stopping, "name": name, **kwargs})
    thread.start()
    return thread
