"""apimachinery's field.Error texts (Invalid, NotSupported) and aggregate formatting, and `Problem`,
their structured form: the core validates once and each caller formats (the policy layer as CR
field errors, plugins as upstream's aggregate message)."""

from __future__ import annotations

import dataclasses
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
    """One validation problem: `path` is relative to the validated object ("key", "values[0]", ...).
    `kind` is the field.ErrorType: Invalid, Duplicate, Required or Forbidden; a non-empty
    `supported` makes it NotSupported."""

    path: str
    value: object
    detail: str
    supported: tuple[str, ...] = ()
    kind: str = "Invalid"

    def under(self, prefix: str) -> Problem:
        """The same problem seen from an enclosing object at `prefix`."""
        return dataclasses.replace(self, path=child_path(prefix, self.path))

    def error(self, base: str) -> str:
        """The field.Error text upstream aggregates, with `base` prefixed to the path."""
        path = child_path(base, self.path)
        if self.supported:
            return not_supported(path, str(self.value), self.supported)
        if self.kind == "Duplicate":
            return f"{path}: Duplicate value: {go_value(self.value)}"
        if self.kind == "Required":
            return f"{path}: Required value: {self.detail}"
        if self.kind == "Forbidden":
            return f"{path}: Forbidden: {self.detail}"
        return invalid(path, self.value, self.detail)

    @property
    def message(self) -> str:
        """The text without path and value, for callers that report the path themselves."""
        if self.supported:
            return f'unsupported value "{self.value}": supported values: ' + ", ".join(self.supported)
        if self.kind == "Duplicate":
            return f"Duplicate value: {go_value(self.value)}"
        return self.detail


class ArgsError(ValueError):
    """Plugin args that upstream's validation rejects; str() is upstream's aggregate message."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = tuple(problems)
        super().__init__(aggregate_message(p.error("") for p in self.problems))


def raise_problems(problems: Sequence[Problem]) -> None:
    if problems:
        raise ArgsError(problems)
