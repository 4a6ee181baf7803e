#!/usr/bin/env python3
"""Writes the Experiment CRD's spec schema into the ExperimentSweep CRD as spec.template.

The API server then checks a sweep's template at admission exactly as it checks an Experiment
(schema and CEL rules); the operator checks each cell (template + matrix values) before any run.
The schema goes between the BEGIN/END marker lines as one line of JSON (valid YAML), so the rest
of the hand-written CRD keeps its comments. `--check` exits 1 when the copy is stale
(tests/unit/test_crds.py runs it); `make sync-chart-crds` runs it first.
"""

from __future__ import annotations

import copy
import json
import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
EXPERIMENTS = ROOT / "crds" / "esbench.io_experiments.yaml"
SWEEPS = ROOT / "crds" / "esbench.io_experimentsweeps.yaml"
BLOCK = re.compile(r"^(?P<indent> *)# BEGIN generated[^\n]*\n(?P<body>.*?)^ *# END generated",
                   re.MULTILINE | re.DOTALL)


def template_schema() -> dict:
    crd = yaml.safe_load(EXPERIMENTS.read_text())
    spec = copy.deepcopy(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"])
    # The sweep's spec is immutable as a whole; the rule would be a second, nested copy.
    spec["x-kubernetes-validations"] = [r for r in spec.get("x-kubernetes-validations", [])
                                        if r["rule"] != "self == oldSelf"]
    spec["description"] = ("An Experiment spec, checked as the Experiment CRD checks one. "
                           "Every cell is this spec with the matrix's values set.")
    return spec


def rendered(text: str) -> str:
    match = BLOCK.search(text)
    if not match:
        raise SystemExit(f"{SWEEPS}: no '# BEGIN generated' / '# END generated' block")
    line = f"{match['indent']}template: {json.dumps(template_schema(), separators=(',', ':'))}\n"
    return text[:match.start("body")] + line + text[match.end("body"):]


def main() -> int:
    text = SWEEPS.read_text()
    new = rendered(text)
    if "--check" in sys.argv[1:]:
        if new != text:
            print(f"{SWEEPS.relative_to(ROOT)}: spec.template is stale: run scripts/sync-sweep-template.py",
                  file=sys.stderr)
            return 1
        return 0
    if new != text:
        SWEEPS.write_text(new)
        print(f"updated spec.template in {SWEEPS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
