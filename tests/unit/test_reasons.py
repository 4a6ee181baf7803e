"""One Reason enum and one ConditionType enum: every reason the operator writes is a member, and each
reason and condition type has its meaning."""

import ast
from pathlib import Path

import esbench.controller
import esbench.planning
from esbench.api.reasons import CONDITION_MEANINGS, MEANINGS, ConditionType, Reason

# The reason's position in the calls that write one (self. included for methods).
_REASON_ARGUMENT = {"_finish": 3, "_update": 2, "emit": 2}


def test_every_reason_has_its_meaning_for_the_reference():
    assert list(MEANINGS) == list(Reason)
    assert all(meaning.strip() for meaning in MEANINGS.values())


def test_every_condition_type_has_its_meaning_for_the_reference():
    assert list(CONDITION_MEANINGS) == list(ConditionType)
    assert all(meaning.strip() for meaning in CONDITION_MEANINGS.values())


def test_the_controller_writes_no_reason_as_a_bare_string():
    bare = []
    for source in [s for role in (esbench.controller, esbench.planning) for s in Path(role.__file__).parent.glob("*.py")]:
        for node in ast.walk(ast.parse(source.read_text())):
            if not isinstance(node, ast.Call):
                continue
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
            position = _REASON_ARGUMENT.get(name)
            if position is not None and len(node.args) > position:
                argument = node.args[position]
                if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
                    bare.append(f"{source.name}:{node.lineno} {argument.value}")
    assert bare == []
