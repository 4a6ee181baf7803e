"""What the CRD's defaults make of a minimal spec: one expectation for the real API server
(tests/integration/test_admission.py) and for local admission (tests/cli/test_validation.py)."""

from __future__ import annotations

from typing import Any

# The defaulted fields of a spec that set only elasticsearch.version and workload.track, by section.
EXPECTED_DEFAULTS: dict[str, dict[str, Any]] = {
    "workload": {"source": "Bundled", "onError": "abort"},
    "elasticsearch": {"tls": True, "storage": {"type": "PersistentVolumeClaim", "size": "10Gi"}},
    "lifecycle": {"cleanup": "Delete", "clusterReadyTimeoutSeconds": 1800},
}


def defaulted_fields(spec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The spec's values at the fields EXPECTED_DEFAULTS names, in its shape (for one `==`)."""
    return {section: {field: (spec.get(section) or {}).get(field) for field in fields}
            for section, fields in EXPECTED_DEFAULTS.items()}
