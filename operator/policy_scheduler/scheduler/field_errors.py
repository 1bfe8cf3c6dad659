"""apimachinery's field.Error texts (Invalid, NotSupported) and aggregate formatting, and `Problem`,
their structured form: the core validates once and each caller formats (the policy layer as CR
field errors, plugins as upstream's aggregate message)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass


def go_value(value: object) -> str:
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def invalid(path: str, value: object, detail: str) -> str:
    return f"{path}: Invalid value: {go_value(value)}: {detail}"


def not_supported(path: str, value: str, valid: Sequence[str]) -> str:
    return f"{path}: Unsupported value: {go_value(value)}: supported values: " + ", ".join(
        json.dumps(v) for v in valid
    )


def child_path(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def aggregate_message(errors: Iterable[str]) -> str:
    """utilerrors aggregate Error(): de-duplicated, bracketed when more than one."""
    unique = list(dict.fromkeys(errors))
    if len(unique) == 1:
        return unique[0]
    return "[" + ", ".join(unique) + "]"


@dataclass(frozen=True, slots=True)
class Problem:
    """One validation problem: `path` is relative to the requirement ("key", "values[0]", ...);
    `supported` is set for field.NotSupported (bad operator), empty for field.Invalid."""

    path: str
    value: object
    detail: str
    supported: tuple[str, ...] = ()

    def error(self, base: str) -> str:
        path = child_path(base, self.path)
        if self.supported:
            return not_supported(path, str(self.value), self.supported)
        return invalid(path, self.value, self.detail)
