"""A ValidatingAdmissionPolicy that refuses to delete one Elasticsearch, as an SRE's guard or a
webhook that is down would: what the operator's cleanup must say and try again."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.support.standin_eck import GROUP, PLURAL, VERSION

HELD = "held by the test"


@contextmanager
def deletion_held(control_plane, namespace: str, name: str) -> Iterator[Callable[[], None]]:
    """Refuses to delete Elasticsearch NAME until the `release` it yields is called (or the block ends)."""
    policy = f"hold-{namespace}"
    admission = client.AdmissionregistrationV1Api(control_plane.api_client())
    admission.create_validating_admission_policy({"metadata": {"name": policy}, "spec": {
        "failurePolicy": "Fail",
        "matchConstraints": {"resourceRules": [{"apiGroups": [GROUP], "apiVersions": [VERSION],
                                                "operations": ["DELETE"], "resources": [PLURAL]}]},
        "validations": [{"expression": f"oldObject.metadata.name != '{name}'", "message": HELD}]}})
    admission.create_validating_admission_policy_binding({"metadata": {"name": policy}, "spec": {
        "policyName": policy, "validationActions": ["Deny"],
        "matchResources": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}}}}})

    def release() -> None:
        for delete in (admission.delete_validating_admission_policy_binding,
                       admission.delete_validating_admission_policy):
            try:
                delete(policy)
            except ApiException as error:
                if error.status != 404:
                    raise
    try:
        yield release
    finally:
        release()


def deletion_refused(apis, namespace: str, name: str) -> bool:
    """Whether the API server enforces the hold on Elasticsearch NAME, which must exist (it loads
    policies a moment after they are made)."""
    try:
        apis.custom.delete_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name, dry_run="All")
    except ApiException as error:
        return HELD in error.body
    return False
