"""Reading JSON-shaped plugin args (kube-scheduler's camelCase names) into typed args dataclasses.

Each plugin with args owns a frozen dataclass with `from_json` (SetDefaults_*Args of
apis/config/v1) and `problems()` (Validate*Args of apis/config/validation); the policy layer
calls the same two, so defaults and rules live once, in the core.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def int_arg(raw: Mapping[str, Any], key: str, default: int) -> int:
    value = raw.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{key}: expected an integer, got {value!r}")
    return value


def bool_arg(raw: Mapping[str, Any], key: str, default: bool) -> bool:
    value = raw.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ValueError(f"{key}: expected a boolean, got {value!r}")
    return value
