"""What the three resources share: the Model base, the API group and version, the labels and
annotations esbench puts on what it makes, a CEL helper, resource requirements and conditions."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from esbench.api.openapi import AnyString
from esbench.api.reasons import Reason

GROUP = "esbench.io"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"


def cel_list(names: tuple[str, ...] | list[str]) -> str:
    """A CEL list literal of names, for a rule such as `k in [...]`."""
    return repr(list(names))


class Model(BaseModel):
    """camelCase on the wire (Kubernetes convention), snake_case in Python; unknown fields are errors."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    def to_wire(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")


Quantity = Annotated[int | str, Field(pattern=(
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"))]


class ResourceRequirements(Model):
    requests: dict[str, Quantity] | None = Field(None, max_length=8)
    limits: dict[str, Quantity] | None = Field(None, max_length=8)


# The labels esbench puts on what it makes. Each owner kind labels its children with its own name
# (an Experiment its cluster and Job, a sweep or a schedule its runs), so handlers can route their
# events; a sweep's runs also say which cell, round and attempt they are.
EXPERIMENT_LABEL = "esbench.io/experiment"
SWEEP_LABEL = "esbench.io/sweep"
SCHEDULE_LABEL = "esbench.io/schedule"
CELL_LABEL = "esbench.io/cell"
REPETITION_LABEL = "esbench.io/repetition"  # the run's round
ATTEMPT_LABEL = "esbench.io/attempt"
WARMUP_CELL_PREFIX = "w"  # warm-up runs' cells are w0, w1, ...; the measured ones c0, c1, ...
# On a sweep's run: the configuration it measures (esbench history's id of its cell's spec). A run
# on the sweep's shared cluster has a spec that names that cluster, one per sweep, in place of the
# cell's elasticsearch: its own spec would make each sweep a series of its own.
CONFIGURATION_ANNOTATION = "esbench.io/configuration"
# On a schedule's run: the tick it was created for (a confirming run: when it was created).
SCHEDULED_AT = "esbench.io/scheduled-at"


# The types of what every resource's status holds.
Int64 = Annotated[int, Field(json_schema_extra={"format": "int64"})]
Timestamp = Annotated[str, Field(json_schema_extra={"format": "date-time"})]
Records = list[dict[str, Any]]  # each a free-form object (typed where it is written)
StatusReason = Annotated[Reason, AnyString()]  # status.reason: a Reason, a string in the CRD


class Condition(Model):
    """A Kubernetes condition (metav1.Condition's fields)."""

    type: str
    status: Literal["True", "False", "Unknown"]
    observed_generation: Int64 | None = None
    last_transition_time: Timestamp
    reason: str
    message: str


Conditions = Annotated[list[Condition], Field(json_schema_extra={
    "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]})]

