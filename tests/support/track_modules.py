"""A bundled track's parameter source (track.py), loaded by path as Rally loads it: it stands
alone, and track folder names such as "period-search" are not Python identifiers."""

from __future__ import annotations

import importlib.util
from types import ModuleType

from esbench.runner.race import TRACKS_DIR


def parameter_source(track: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"{track.replace('-', '_')}_track", TRACKS_DIR / track / "track.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
