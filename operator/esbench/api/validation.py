"""Admission without an API server: the CRD's own schema and CEL rules, evaluated locally.

`esbench run` must reject a bad Experiment exactly as `kubectl apply` would, before anything
starts. Rather than restating the rules, this module takes the schema of the Experiment CRD as
api/crds.py makes it from the models (what crds/ holds) and does what kube-apiserver does on
create, in the same order and with the same messages (kube-openapi's and apimachinery's wording):

1. strict decoding: unknown fields are an error (kubectl's default `--validate=strict`);
2. status is dropped (a status subresource ignores it on create);
3. null values are pruned (no field is nullable), then schema defaults applied;
4. metadata.name is checked (RFC 1123 subdomain), then the OpenAPI schema: types, required,
   enum, bounds, patterns, lengths, list-map keys;
5. the x-kubernetes-validations CEL rules (via cel-python), unless step 4 found a "blocking"
   error (wrong type, missing field, unsupported value, too long, too many), in which case the
   API server skips them and says so;
6. the result is the message the API server returns, or the defaulted document it would store.

Transition rules (those using oldSelf) only apply to updates and are skipped. The tests check
every case of the admission table against this module and against a real kube-apiserver.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import celpy
from celpy import celtypes

from esbench.api import crds, models

# ObjectMeta's fields: metadata is decoded into ObjectMeta, so anything else is unknown.
_OBJECT_META_FIELDS = {
    "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
    "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations",
    "ownerReferences", "finalizers", "managedFields",
}
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS1123_SUBDOMAIN_MESSAGE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation "
    "is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
_SKIPPED_RULES = "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"


# --- errors, worded as apimachinery's field.Error -------------------------------------------

# Error types after which the API server does not evaluate CEL rules (hasBlockingErr).
_BLOCKING = {"Required", "NotSupported", "TooLong", "TooMany", "TypeInvalid"}


@dataclass(frozen=True)
class FieldError:
    path: str | None  # "spec.index.shards"; None is the object itself (printed "<nil>")
    type: str  # Required, Invalid, TypeInvalid, NotSupported, Duplicate, TooLong, TooMany
    detail: str  # the text after the field, e.g. 'Invalid value: 0: ... should be ...'

    def __str__(self) -> str:
        return f"{self.path or '<nil>'}: {self.detail}"


def _go_value(value: Any) -> str:
    """A bad value as Go's field.Error prints it (%v for numbers and booleans, %q for strings)."""
    if value is None:
        return '"null"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, dict):  # %#v of a map[string]interface{} (list-map keys)
        inner = ",".join(f"{json.dumps(k)}:{_go_value(v)}" for k, v in value.items())
        return f"map[string]interface {{}}{{{inner}}}"
    return json.dumps(value)


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _invalid(path: str | None, value: Any, message: str, type_: str = "Invalid") -> FieldError:
    return FieldError(path, type_, f"Invalid value: {_go_value(value)}: {message}")


class Rejected(Exception):
    """The API server's answer to a bad Experiment: its HTTP status and its message."""

    def __init__(self, status: int, message: str, errors: list[str] | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.errors = errors or [message]


# --- paths ---------------------------------------------------------------------------------


def _child(path: str | None, key: str) -> str:
    return f"{path}.{key}" if path else key


def _item(path: str | None, index: int) -> str:
    return f"{path or ''}[{index}]"


# --- 1. strict decoding ---------------------------------------------------------------------


def unknown_fields(document: Any, schema: dict[str, Any], path: str | None = None) -> Iterator[str]:
    """Paths of fields the schema does not declare (where it does not preserve unknown fields)."""
    if schema.get("x-kubernetes-preserve-unknown-fields"):
        return
    if isinstance(document, dict):
        properties = schema.get("properties")
        additional = schema.get("additionalProperties")
        for key, value in document.items():
            if path == "metadata" and schema.get("properties") is None:
                if key not in _OBJECT_META_FIELDS:
                    yield _child(path, key)
            elif properties is not None and key in properties:
                yield from unknown_fields(value, properties[key], _child(path, key))
            elif isinstance(additional, dict):
                yield from unknown_fields(value, additional, _child(path, key))
            else:  # pruning would drop it, so strict decoding reports it (even under a scalar field)
                yield _child(path, key)
    elif isinstance(document, list) and isinstance(schema.get("items"), dict):
        for index, value in enumerate(document):
            yield from unknown_fields(value, schema["items"], _item(path, index))


# --- 3. pruning nulls and defaulting --------------------------------------------------------


def prune_nulls(document: Any, schema: dict[str, Any]) -> Any:
    """Drop null values of non-nullable fields (inside preserved-unknown fields, nulls stay)."""
    if schema.get("x-kubernetes-preserve-unknown-fields") or not isinstance(document, (dict, list)):
        return document
    if isinstance(document, list):
        items = schema.get("items") or {}
        return [prune_nulls(v, items) for v in document]
    properties = schema.get("properties") or {}
    additional = schema.get("additionalProperties")
    result = {}
    for key, value in document.items():
        sub = properties.get(key, additional if isinstance(additional, dict) else {})
        if value is None and not sub.get("nullable"):
            continue
        result[key] = prune_nulls(value, sub)
    return result


def apply_defaults(document: Any, schema: dict[str, Any]) -> Any:
    """Schema defaults for missing fields; defaults are themselves defaulted (as the API server does)."""
    if isinstance(document, list):
        items = schema.get("items") or {}
        return [apply_defaults(v, items) for v in document]
    if not isinstance(document, dict):
        return document
    properties = schema.get("properties") or {}
    result = dict(document)
    for key, sub in properties.items():
        if key not in result and "default" in sub:
            result[key] = json.loads(json.dumps(sub["default"]))
    for key, value in result.items():
        if key in properties:
            result[key] = apply_defaults(value, properties[key])
        elif isinstance(schema.get("additionalProperties"), dict):
            result[key] = apply_defaults(value, schema["additionalProperties"])
    return result


# --- 4. metadata and OpenAPI schema ---------------------------------------------------------


def metadata_errors(metadata: Any) -> list[FieldError]:
    name = (metadata or {}).get("name") if isinstance(metadata, dict) else None
    if not name:
        return [FieldError("metadata.name", "Required", "Required value: name or generateName is required")]
    if len(name) > 253 or not _DNS1123_SUBDOMAIN.match(name):
        return [_invalid("metadata.name", name, _DNS1123_SUBDOMAIN_MESSAGE)]
    return []


def _type_matches(value: Any, schema: dict[str, Any]) -> tuple[bool, str]:
    if schema.get("x-kubernetes-int-or-string"):
        return (isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))), "integer,string"
    expected = schema.get("type")
    if expected is None:
        return True, ""
    return _type_name(value) == expected or (expected == "number" and _type_name(value) == "integer"), expected


def schema_errors(value: Any, schema: dict[str, Any], path: str | None) -> list[FieldError]:
    """kube-openapi's validation of one value, recursively (messages as it words them)."""
    errors: list[FieldError] = []
    ok, expected = _type_matches(value, schema)
    if not ok:
        actual = _go_value(_type_name(value))
        return [FieldError(path, "TypeInvalid", f"Invalid value: {actual}: {path} in body must be of type {expected}: {actual}")]
    if "enum" in schema and value not in schema["enum"]:
        supported = ", ".join(_go_value(v) for v in schema["enum"])
        errors.append(FieldError(path, "NotSupported", f"Unsupported value: {_go_value(value)}: supported values: {supported}"))
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and schema.get("exclusiveMinimum") and value <= schema["minimum"]:
            errors.append(_invalid(path, value, f"{path} in body should be greater than {_go_value(schema['minimum'])}"))
        elif "minimum" in schema and value < schema["minimum"]:
            errors.append(_invalid(path, value, f"{path} in body should be greater than or equal to {_go_value(schema['minimum'])}"))
        if "maximum" in schema and value > schema["maximum"]:
            errors.append(_invalid(path, value, f"{path} in body should be less than or equal to {_go_value(schema['maximum'])}"))
    if isinstance(value, str):
        if "maxLength" in schema and len(value.encode()) > schema["maxLength"]:
            errors.append(FieldError(path, "TooLong", f"Too long: may not be more than {schema['maxLength']} bytes"))
        if "pattern" in schema and not re.search(schema["pattern"], value):
            errors.append(_invalid(path, value, f"{path} in body should match '{schema['pattern']}'"))
    if isinstance(value, list):
        if "minItems" in schema and len(value) < schema["minItems"]:
            errors.append(_invalid(path, len(value), f"{path} in body should have at least {schema['minItems']} items"))
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            errors.append(FieldError(path, "TooMany", f"Too many: {len(value)}: must have at most {schema['maxItems']} items"))
        items = schema.get("items") or {}
        for index, item in enumerate(value):
            errors += schema_errors(item, items, _item(path, index))
    if isinstance(value, dict):
        if "maxProperties" in schema and len(value) > schema["maxProperties"]:
            errors.append(FieldError(path, "TooMany", f"Too many: {len(value)}: must have at most {schema['maxProperties']} items"))
        for key in schema.get("required") or []:
            if key not in value:
                errors.append(FieldError(_child(path, key), "Required", "Required value"))
        if not schema.get("x-kubernetes-preserve-unknown-fields") or schema.get("properties"):
            properties = schema.get("properties") or {}
            additional = schema.get("additionalProperties")
            for key, sub in value.items():
                if key in properties:
                    if path is None and key == "metadata":
                        continue  # validated as ObjectMeta
                    errors += schema_errors(sub, properties[key], _child(path, key))
                elif isinstance(additional, dict):
                    errors += schema_errors(sub, additional, _child(path, key))
    return errors


def list_map_errors(value: Any, schema: dict[str, Any], path: str | None) -> list[FieldError]:
    """x-kubernetes-list-type: map: no two items with the same keys."""
    errors: list[FieldError] = []
    if isinstance(value, list):
        items = schema.get("items") or {}
        if schema.get("x-kubernetes-list-type") == "map":
            keys = schema.get("x-kubernetes-list-map-keys") or []
            seen: list[dict[str, Any]] = []
            for index, item in enumerate(value):
                if not isinstance(item, dict):
                    continue
                key = {k: item.get(k) for k in keys if k in item}
                if key in seen:
                    errors.append(FieldError(_item(path, index), "Duplicate", f"Duplicate value: {_go_value(key)}"))
                seen.append(key)
        for index, item in enumerate(value):
            errors += list_map_errors(item, items, _item(path, index))
    elif isinstance(value, dict):
        properties = schema.get("properties") or {}
        for key, sub in value.items():
            if key in properties:
                errors += list_map_errors(sub, properties[key], _child(path, key))
    return errors


# --- 5. CEL rules ---------------------------------------------------------------------------


def _split(text: celtypes.StringType, separator: celtypes.StringType) -> celtypes.ListType:
    # Kubernetes' CEL strings extension; cel-python's standard library lacks it.
    return celtypes.ListType([celtypes.StringType(part) for part in str(text).split(str(separator))])


_CEL_FUNCTIONS = {"split": _split}


@functools.lru_cache(maxsize=256)
def _program(rule: str) -> celpy.Runner:
    environment = celpy.Environment()
    return environment.program(environment.compile(rule), functions=_CEL_FUNCTIONS)


def _is_transition_rule(rule: str) -> bool:
    return re.search(r"\boldSelf\b", rule) is not None


def cel_errors(value: Any, schema: dict[str, Any], path: str | None) -> list[FieldError]:
    """Every x-kubernetes-validations rule at and below value (children before their parent's
    siblings, as the schema nests them)."""
    errors: list[FieldError] = []
    for validation in schema.get("x-kubernetes-validations") or []:
        rule = validation["rule"]
        if _is_transition_rule(rule):
            continue  # only evaluated on update
        message = validation.get("message") or f"failed rule: {rule}"
        try:
            passed = _program(rule).evaluate({"self": celpy.json_to_cel(value)})
        except celpy.CELEvalError as error:
            errors.append(_invalid(path, _type_name(value), f"rule evaluation error: {error.args[0] if error.args else error}"))
            continue
        if isinstance(passed, celpy.CELEvalError):
            errors.append(_invalid(path, _type_name(value), f"rule evaluation error: {passed.args[0] if passed.args else passed}"))
        elif not bool(passed):
            errors.append(_invalid(path, _type_name(value), message))
    if schema.get("x-kubernetes-preserve-unknown-fields") and not schema.get("properties"):
        return errors
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        additional = schema.get("additionalProperties")
        for key, sub in value.items():
            if key in properties:
                errors += cel_errors(sub, properties[key], _child(path, key))
            elif isinstance(additional, dict):
                errors += cel_errors(sub, additional, _child(path, key))
    elif isinstance(value, list):
        items = schema.get("items") or {}
        for index, item in enumerate(value):
            errors += cel_errors(item, items, _item(path, index))
    return errors


# --- the whole admission --------------------------------------------------------------------


SCHEMAS = {models.KIND: crds.experiment_schema, models.SWEEP_KIND: crds.sweep_schema}


def admit(document: Any, schema: dict[str, Any] | None = None, kind: str = models.KIND) -> dict[str, Any]:
    """The Experiment (or ExperimentSweep) as the API server would store it on create, or
    Rejected with its message."""
    schema = schema or SCHEMAS[kind]()
    if not isinstance(document, dict):
        raise Rejected(400, f"an {kind} must be a mapping (YAML or JSON object), got {_type_name(document)}")
    if document.get("apiVersion") != models.API_VERSION or document.get("kind") != kind:
        raise Rejected(
            400,
            f"not an {kind}: expected apiVersion {models.API_VERSION} and kind {kind}, "
            f"got apiVersion {document.get('apiVersion')!r} and kind {document.get('kind')!r}",
        )
    unknown = sorted(set(unknown_fields(document, schema)))
    if unknown:
        listed = ", ".join(f'unknown field "{field}"' for field in unknown)
        raise Rejected(
            400,
            f'{kind} in version "{models.VERSION}" cannot be handled as a {kind}: strict decoding error: {listed}',
            [f'unknown field "{field}"' for field in unknown],
        )
    stored = {k: v for k, v in document.items() if k != "status"}
    stored = apply_defaults(prune_nulls(stored, schema), schema)

    errors = metadata_errors(stored.get("metadata"))
    errors += schema_errors(stored, schema, None)
    errors += list_map_errors(stored, schema, None)
    if any(e.type in _BLOCKING for e in errors):
        errors.append(_invalid(None, None, _SKIPPED_RULES))
    else:
        errors += cel_errors(stored, schema, None)
    if errors:
        name = (stored.get("metadata") or {}).get("name") if isinstance(stored.get("metadata"), dict) else None
        texts = [str(e) for e in errors]
        joined = texts[0] if len(texts) == 1 else f"[{', '.join(texts)}]"
        raise Rejected(422, f'{kind}.{models.GROUP} "{name or ""}" is invalid: {joined}', texts)
    return stored


def parse_spec(stored: dict[str, Any]) -> models.ExperimentSpec:
    """The typed spec of an admitted Experiment, with the one rule CEL cannot check (track params
    repeating spec.index) reported as the operator reports it (InvalidSpec)."""
    import pydantic

    try:
        return models.ExperimentSpec.model_validate(stored["spec"])
    except pydantic.ValidationError as error:
        raise Rejected(422, "; ".join(e["msg"].removeprefix("Value error, ") for e in error.errors())) from error
