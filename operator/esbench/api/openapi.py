"""The models' OpenAPI v3 schema, in the structural form a CRD needs.

The models in api/models/ are the one source of the API: the CRDs, local admission and the
API reference are made from what this module reads off them. Constraints come from the fields
(ge, le, gt, lt, min_length, max_length, pattern, description, default); what only Kubernetes
knows (CEL rules, list-map keys, int-or-string, preserved unknown fields) comes from a field's or
a model's `json_schema_extra`.

pydantic's own JSON Schema is not used: it writes $refs, anyOf for optional fields and JSON
Schema 2020's numeric exclusiveMinimum, none of which a structural schema accepts.
"""

from __future__ import annotations

import enum
import types
import typing
from dataclasses import dataclass
from typing import Any

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

# Keywords of json_schema_extra that are CRD schema keywords (copied as they are).
PRESERVE_UNKNOWN = {"x-kubernetes-preserve-unknown-fields": True}
INT_OR_STRING = {"x-kubernetes-int-or-string": True}


def rules(*pairs: tuple[str, str]) -> dict[str, Any]:
    """x-kubernetes-validations from (CEL rule, message) pairs."""
    return {"x-kubernetes-validations": [{"rule": rule, "message": message} for rule, message in pairs]}


@dataclass(frozen=True)
class SchemaOf:
    """Field metadata: the field is a free-form dict in Python, admitted with `model`'s schema
    (a sweep's template is an Experiment spec that its cells override)."""

    model: type[BaseModel]
    description: str


@dataclass(frozen=True)
class AnyString:
    """Type metadata: an enum in Python, any string in the CRD. For what the operator writes in a
    status: the API server keeps accepting what an operator of another version wrote there."""


def schema(model: type[BaseModel]) -> dict[str, Any]:
    """The structural schema of a model: an object with its fields as properties."""
    properties: dict[str, Any] = {}
    required = []
    for name, field in model.model_fields.items():
        key = field.alias or name
        properties[key] = _field_schema(field)
        if field.is_required():
            required.append(key)
    result: dict[str, Any] = {"type": "object"}
    if required:
        result["required"] = required
    result.update(_extra(model.model_config.get("json_schema_extra")))
    result["properties"] = properties
    return result


def _extra(extra: Any) -> dict[str, Any]:
    if extra is None:
        return {}
    if not isinstance(extra, dict):
        raise TypeError(f"json_schema_extra must be a dict of CRD schema keywords, got {extra!r}")
    return dict(extra)


def _field_schema(field: FieldInfo) -> dict[str, Any]:
    schema_of = next((m for m in field.metadata if isinstance(m, SchemaOf)), None)
    if schema_of:
        result = schema(schema_of.model)
        result["description"] = schema_of.description
        return result
    result = _type_schema(field.annotation)
    _constrain(result, field.metadata)
    default = _default(field)
    if default is not None:
        result["default"] = default
    if field.description:
        result["description"] = field.description
    result.update(_extra(field.json_schema_extra))
    return result


def _default(field: FieldInfo) -> Any:
    """The default the API server writes: scalars and enums as they are, a model as {} (which
    the API server then defaults field by field); None and empty lists are no default."""
    value = field.default
    if value is PydanticUndefined or value is None or value == []:
        return None
    if isinstance(value, BaseModel):
        return {}
    if isinstance(value, enum.Enum):
        return value.value
    return value


def _type_schema(annotation: Any) -> dict[str, Any]:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        if any(isinstance(arg, AnyString) for arg in args[1:]):
            return {"type": "string"}
        result = _type_schema(args[0])
        metadata = [m for arg in args[1:] for m in (arg.metadata if isinstance(arg, FieldInfo) else [arg])]
        _constrain(result, metadata)
        for arg in args[1:]:
            if isinstance(arg, FieldInfo):
                result.update(_extra(arg.json_schema_extra))
        return result
    if origin in (typing.Union, types.UnionType):
        members = [a for a in args if a is not type(None)]
        if len(members) == 1:
            return _type_schema(members[0])
        if {_plain(m) for m in members} == {int, str}:
            return dict(INT_OR_STRING)
        raise TypeError(f"no structural schema for the union {annotation}")
    if origin is typing.Literal:
        return {"type": "string", "enum": list(args)}
    if origin is list:
        return {"type": "array", "items": _type_schema(args[0])}
    if origin is dict:
        if args[1] is Any:
            return {"type": "object", **PRESERVE_UNKNOWN}
        return {"type": "object", "additionalProperties": _type_schema(args[1])}
    if annotation is Any:
        return dict(PRESERVE_UNKNOWN)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return schema(annotation)
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return {"type": "string", "enum": [member.value for member in annotation]}
    scalar = {bool: "boolean", int: "integer", float: "number", str: "string"}.get(_plain(annotation))
    if scalar:
        return {"type": scalar}
    raise TypeError(f"no structural schema for {annotation!r}")


def _plain(annotation: Any) -> Any:
    """int for StrictInt and the like (Annotated[int, Strict()])."""
    if typing.get_origin(annotation) is typing.Annotated:
        return typing.get_args(annotation)[0]
    return annotation


def _constrain(result: dict[str, Any], metadata: list[Any]) -> None:
    sizes = {"string": ("minLength", "maxLength"), "array": ("minItems", "maxItems"),
             "object": ("minProperties", "maxProperties")}
    low, high = sizes.get(result.get("type"), ("minLength", "maxLength"))
    for item in metadata:
        if isinstance(item, annotated_types.Ge):
            result["minimum"] = item.ge
        elif isinstance(item, annotated_types.Gt):
            result.update(minimum=item.gt, exclusiveMinimum=True)
        elif isinstance(item, annotated_types.Le):
            result["maximum"] = item.le
        elif isinstance(item, annotated_types.Lt):
            result.update(maximum=item.lt, exclusiveMaximum=True)
        elif isinstance(item, annotated_types.MinLen):
            result[low] = item.min_length
        elif isinstance(item, annotated_types.MaxLen):
            result[high] = item.max_length
        elif getattr(item, "pattern", None):
            result["pattern"] = item.pattern
