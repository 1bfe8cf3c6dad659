"""Reading JSON-shaped plugin args (kube-scheduler's camelCase names) into typed args dataclasses.

Each plugin with args names its args type (`Plugin.args_type`): a frozen dataclass, in-tree ones
deriving PluginArgs, with `defaulted` (SetDefaults_*Args of apis/config/v1) and `problems()`
(Validate*Args of apis/config/validation). `decode_args` runs both; the framework calls it once per
plugin when it builds a profile, and the policy layer uses the same type, so defaults and rules
live once, in the core.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Protocol, Self, TypeVar, cast

from policy_scheduler.scheduler.field_errors import Problem, raise_problems
from policy_scheduler.scheduler.versioning.features import Features, default_features


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


class ArgsType(Protocol):
    """What a plugin's args type provides: the contract out-of-tree args types follow too."""

    @classmethod
    def defaulted(cls, raw: Mapping[str, Any]) -> Self:
        """SetDefaults_*Args: the typed args, before validation; ValueError for a wrong type."""
        ...

    def problems(self) -> list[Problem]:
        """Validate*Args, as structured problems."""
        ...

    def to_json(self) -> dict[str, Any]: ...


ArgsT = TypeVar("ArgsT", bound=ArgsType)


def decode_args(args_type: type[ArgsT], raw: Mapping[str, Any], features: Features | None = None) -> ArgsT:
    """The typed args of `raw`, defaulted and validated as `features`' release does (None: the
    newest release's defaults); ArgsError (upstream's aggregate message) when validation finds
    problems. In-tree args whose defaults or rules changed between releases are PluginArgs and
    override `defaulted_for`/`problems_for`; other args types follow the plain protocol."""
    if isinstance(args_type, type) and issubclass(args_type, PluginArgs):
        versioned = default_features() if features is None else features
        typed = args_type.defaulted_for(raw, versioned)
        raise_problems(typed.problems_for(versioned))
        return cast(ArgsT, typed)
    args = args_type.defaulted(raw)
    raise_problems(args.problems())
    return args


class PluginArgs:
    """Base of every args dataclass: a type states its fields, `defaulted` and `problems`."""

    __slots__ = ()

    @classmethod
    def defaulted(cls, raw: Mapping[str, Any]) -> Self:
        """SetDefaults_*Args: the typed args, before validation."""
        raise NotImplementedError

    def problems(self) -> list[Problem]:
        """Validate*Args, as structured problems."""
        raise NotImplementedError

    @classmethod
    def defaulted_for(cls, raw: Mapping[str, Any], features: Features) -> Self:
        """SetDefaults_*Args of `features`' release, where a release or a gate changed them."""
        return cls.defaulted(raw)

    def problems_for(self, features: Features) -> list[Problem]:
        """Validate*Args of `features`' release, where a release or a gate changed them."""
        return self.problems()

    def to_json(self) -> dict[str, Any]:
        raise NotImplementedError

    @classmethod
    def from_json(cls, raw: Mapping[str, Any], features: Features | None = None) -> Self:
        return decode_args(cls, raw, features)


def json_name(field_name: str) -> str:
    """The camelCase config key of a snake_case field: pod_group_backoff_seconds → podGroupBackoffSeconds."""
    first, *rest = field_name.split("_")
    return first + "".join(word.capitalize() for word in rest)


class ScalarArgs(PluginArgs):
    """Args whose fields are all integers or booleans, named as the camelCase config keys and
    defaulted to the field defaults when unset."""

    __slots__ = ()

    @classmethod
    def defaulted(cls, raw: Mapping[str, Any]) -> Self:
        values: list[int | bool] = []
        for field in dataclasses.fields(cast(Any, cls)):
            default = cast(int, field.default)  # every field of ScalarArgs has an int or bool default
            key = json_name(field.name)
            read = bool_arg(raw, key, default) if isinstance(default, bool) else int_arg(raw, key, default)
            values.append(read)
        return cls(*values)

    def to_json(self) -> dict[str, Any]:
        return {json_name(f.name): getattr(self, f.name) for f in dataclasses.fields(cast(Any, self))}
