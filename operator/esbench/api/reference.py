"""The API reference (docs/api.md), made from the CRDs that the models make.

One table per resource section, a row per field (its path, type, default, bounds and
description), then the rules the API server checks at admission with the message it answers;
last, every reason esbench writes, with its meaning.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from esbench.api import crds
from esbench.api.reasons import CONDITION_MEANINGS, MEANINGS

_BOUNDS = (("minimum", ">="), ("maximum", "<="), ("minLength", "length >="), ("maxLength", "length <="),
           ("minItems", "items >="), ("maxItems", "items <="), ("maxProperties", "keys <="))


def _type(schema: dict[str, Any]) -> str:
    if schema.get("x-kubernetes-int-or-string"):
        return "integer or string"
    if schema.get("type") == "array":
        return f"list of {_type(schema.get('items') or {})}"
    if schema.get("type") == "object" and isinstance(schema.get("additionalProperties"), dict):
        return f"map of {_type(schema['additionalProperties'])}"
    if "type" not in schema:
        return "any"
    return schema["type"] + (f" ({schema['format']})" if "format" in schema else "")


def _bounds(schema: dict[str, Any]) -> list[str]:
    found = []
    for key, label in _BOUNDS:
        if key in schema:
            strict = key == "minimum" and schema.get("exclusiveMinimum") or key == "maximum" and schema.get(
                "exclusiveMaximum")
            found.append(f"{label.replace('=', '') if strict else label} {schema[key]}")
    if "enum" in schema:
        found.append("one of " + ", ".join(f"`{v}`" for v in schema["enum"]))
    if "enum" in (schema.get("items") or {}):
        found.append("each one of " + ", ".join(f"`{v}`" for v in schema["items"]["enum"]))
    if "pattern" in schema:
        found.append(f"matches `{schema['pattern']}`")
    if schema.get("x-kubernetes-list-type") == "map":
        found.append("unique " + ", ".join(schema["x-kubernetes-list-map-keys"]))
    return found


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


# A sweep's template is an Experiment spec, described once, under Experiment.
_NOT_EXPANDED = ("spec.template",)


def _fields(schema: dict[str, Any], path: str, required: bool) -> Iterator[tuple[str, dict[str, Any], bool]]:
    yield path, schema, required
    if path in _NOT_EXPANDED:
        return
    children = schema.get("properties") or {}
    if schema.get("type") == "array":
        children = (schema.get("items") or {}).get("properties") or {}
        path += "[]"
        schema = schema.get("items") or {}
    for name, child in children.items():
        yield from _fields(child, f"{path}.{name}", name in (schema.get("required") or []))


def _section(title: str, schema: dict[str, Any], path: str) -> list[str]:
    lines = [f"### {title}", "", "| Field | Type | Default | Bounds | Description |", "|---|---|---|---|---|"]
    rules = []
    for field, sub, required in _fields(schema, path, True):
        default = f"`{json.dumps(sub['default'])}`" if "default" in sub else ("required" if required else "")
        lines.append(f"| `{field}` | {_type(sub)} | {default} | {_cell('; '.join(_bounds(sub)))} | "
                     f"{_cell(sub.get('description', ''))} |")
        rules += [(field, rule) for rule in sub.get("x-kubernetes-validations") or []]
        items = sub.get("items") or {}
        rules += [(f"{field}[]", rule) for rule in items.get("x-kubernetes-validations") or []]
    if rules:
        lines += ["", "Rules checked at admission (CEL), with the API server's answer:", ""]
        lines += [f"- `{field}`: {_cell(rule['message'])}" for field, rule in rules]
    return lines + [""]


def markdown() -> str:
    lines = [
        "# API reference: esbench.io/v1alpha1",
        "",
        "Generated from the models in `operator/esbench/api/models/` by `scripts/generate-api.py`;",
        "edit the models, not this page. The CRDs in `crds/` come from the same models, and",
        "`esbench run` admits an Experiment with the same schema and rules as the API server.",
        "",
    ]
    for make in crds.FILES.values():
        crd = make()
        kind = crd["spec"]["names"]["kind"]
        version = crd["spec"]["versions"][0]
        root = version["schema"]["openAPIV3Schema"]
        lines += [f"## {kind}", "", f"`kubectl get {crd['spec']['names']['shortNames'][0]}` prints: "
                  + ", ".join(c["name"] for c in version["additionalPrinterColumns"]) + ".", ""]
        lines += [f"- `metadata.name`: {_cell(rule['message'])}" for rule in root.get("x-kubernetes-validations", [])]
        lines.append("")
        lines += _section("spec", root["properties"]["spec"], "spec")
        lines += _section("status", root["properties"]["status"], "status")
    lines += ["## Condition types", "", "In `status.conditions`: each says what it means when True.", "",
              "| Type | Meaning |", "|---|---|"]
    lines += [f"| `{type_}` | {_cell(meaning)} |" for type_, meaning in CONDITION_MEANINGS.items()]
    lines += ["", "## Reasons", "", "In `status.reason`, in conditions, in Events (marked), and in the runner's report.",
              "",
              "| Reason | Meaning |", "|---|---|"]
    lines += [f"| `{reason}` | {_cell(meaning)} |" for reason, meaning in MEANINGS.items()]
    return "\n".join(lines).rstrip("\n") + "\n"
