#!/usr/bin/env python3
"""Writes what the API models make: the CRDs (crds/ and the chart's copy) and docs/api.md.

`--check` writes nothing and exits 1 naming each stale file (make lint runs it; so does
tests/unit/test_generated_api.py).
"""

from __future__ import annotations

import sys
from pathlib import Path

from esbench.api import crds, reference

ROOT = Path(__file__).resolve().parents[1]
CRD_DIRS = (ROOT / "crds", ROOT / "charts" / "esbench" / "crds")


def generated() -> dict[Path, str]:
    files = {directory / name: crds.render(make()) for directory in CRD_DIRS for name, make in crds.FILES.items()}
    files[ROOT / "docs" / "api.md"] = reference.markdown()
    return files


def main() -> int:
    files = generated()
    # A CRD that the models no longer make must not stay behind in crds/ or the chart.
    extra = [path for directory in CRD_DIRS for path in directory.glob("*.yaml") if path not in files]
    stale = [path for path, text in files.items() if not path.is_file() or path.read_text() != text]
    if "--check" in sys.argv[1:]:
        for path in stale + extra:
            print(f"{path.relative_to(ROOT)} is stale: run scripts/generate-api.py (make api)", file=sys.stderr)
        return 1 if stale or extra else 0
    for path in extra:
        path.unlink()
    for path in stale:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(files[path])
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
