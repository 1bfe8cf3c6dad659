"""The CRDs' x-kubernetes-validations rules, evaluated offline with cel-python (module celpy).

cel-python implements standard CEL; Kubernetes adds libraries (lists' isSorted, quantity(), ip(),
url(), strings' lowerAscii...). A rule calling a function cel-python lacks is never passed
silently: it is reported as a problem naming the function. `unsupported_functions` tells which
rules those are; tests/test_validate_cel.py checks every rule of our CRDs is fully supported.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import celpy
from celpy import celtypes
from celpy.adapter import json_to_cel
from celpy.evaluation import CELEvalError, base_functions

from policy_scheduler.policy.errors import join_path
from policy_scheduler.validate.schema import Schema

VALIDATIONS = "x-kubernetes-validations"
_MACROS = frozenset({"has", "all", "exists", "exists_one", "map", "filter"})
SUPPORTED_FUNCTIONS = frozenset(name for name in base_functions if name[:1].isalpha()) | _MACROS
_STRINGS = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")
_CALLS = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(")


@dataclass(frozen=True, slots=True)
class RuleError:
    path: str
    message: str


def unsupported_functions(rule: str) -> list[str]:
    """Functions `rule` calls that cel-python does not have (string literals ignored)."""
    code = _STRINGS.sub("''", rule)
    return sorted({name for name in _CALLS.findall(code) if name not in SUPPORTED_FUNCTIONS})


@lru_cache(maxsize=256)
def _program(rule: str) -> celpy.Runner:
    env = celpy.Environment()
    return env.program(env.compile(rule))


def _root_view(obj: Mapping[str, Any]) -> dict[str, Any]:
    """At the root, CEL sees apiVersion, kind, spec... and only metadata.name and generateName."""
    view = dict(obj)
    meta = obj.get("metadata")
    if isinstance(meta, Mapping):
        view["metadata"] = {k: meta[k] for k in ("name", "generateName") if k in meta}
    return view


def check_rules(obj: Mapping[str, Any], schema: Schema) -> list[RuleError]:
    """Every rule of the schema tree, on each value present (list items one by one)."""
    errors: list[RuleError] = []
    for value, node, path in _nodes(_root_view(obj), schema, ""):
        for rule in node.get(VALIDATIONS) or ():
            error = _evaluate(rule, value, path)
            if error is not None:
                errors.append(error)
    return errors


def _nodes(value: Any, schema: Schema, path: str) -> Iterator[tuple[Any, Schema, str]]:
    if value is None:
        return
    yield value, schema, path
    if isinstance(value, Mapping):
        properties: Mapping[str, Schema] = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            sub = properties.get(key, extra if isinstance(extra, Mapping) else None)
            if sub is not None:
                yield from _nodes(item, sub, join_path(path, str(key)))
    elif isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for i, item in enumerate(value):
            yield from _nodes(item, schema["items"], join_path(path, i))


def _evaluate(rule: Mapping[str, Any], value: Any, path: str) -> RuleError | None:
    text = str(rule.get("rule", ""))
    where = join_path(path, str(rule["fieldPath"]).lstrip(".")) if rule.get("fieldPath") else path
    if "oldSelf" in text:
        return None  # a transition rule: it only applies to updates
    missing = unsupported_functions(text)
    if missing:
        names = ", ".join(missing)
        return RuleError(where, f"rule not checked offline: CEL function(s) {names} not supported: {text}")
    try:
        result = _program(text).evaluate({"self": json_to_cel(value)})
    except CELEvalError as exc:
        return RuleError(where, f"{_eval_message(exc)} evaluating rule: {text}")
    except Exception as exc:  # a parse error: the CRD itself would be refused
        return RuleError(where, f"rule not checked offline: {type(exc).__name__}: {exc}: {text}")
    if isinstance(result, CELEvalError):
        return RuleError(where, f"{_eval_message(result)} evaluating rule: {text}")
    if isinstance(result, celtypes.BoolType) and bool(result):
        return None
    if not isinstance(result, celtypes.BoolType):
        return RuleError(where, f"rule did not evaluate to a boolean: {text}")
    return RuleError(where, str(rule.get("message") or f"failed rule: {text}"))


def _eval_message(exc: CELEvalError) -> str:
    text = str(exc.args[0]) if exc.args else str(exc)
    return text.split(" (in activation")[0]
