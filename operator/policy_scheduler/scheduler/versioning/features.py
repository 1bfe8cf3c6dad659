"""Features: the Kubernetes release whose semantics a profile follows, and its feature gates.

One frozen value per profile, built when the profile is resolved and handed to its plugins through
the framework's Handle. A plugin reads what it needs once, when it is built:

    self.scores_improvement = handle.features.behaviour.balanced_allocation_scores_improvement
    self.enabled = handle.features.enabled(NODE_DECLARED_FEATURES)

Settings are checked as kube-scheduler checks --feature-gates (component-base featuregate):
a gate the release does not have is "unrecognized", a locked gate keeps its value, a gate may be
on only when the gates it depends on are, AllAlpha/AllBeta set every gate of their stage that is
not set explicitly. On top, a scheduler gate set to a value the core does not implement is
refused (gates.IMPLEMENTED).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from policy_scheduler.scheduler.versioning import gate_table
from policy_scheduler.scheduler.versioning.behaviour import BEHAVIOURS, Behaviour
from policy_scheduler.scheduler.versioning.gates import ALL_ALPHA, ALL_BETA, IMPLEMENTED, SCHEDULER_GATES
from policy_scheduler.scheduler.versioning.version import (
    NEWEST_SUPPORTED,
    SUPPORTED_VERSIONS,
    KubernetesVersion,
)

ALPHA = "Alpha"
BETA = "Beta"


@dataclass(frozen=True, slots=True)
class GateSpec:
    """A gate as a release has it by default."""

    default: bool
    stage: str  # Alpha, Beta, GA, Deprecated
    locked: bool


def _parse_cell(cell: str) -> GateSpec | None:
    if cell == "-":
        return None
    words = cell.split()
    return GateSpec(words[0] == "on", words[1], "locked" in words[2:])


def _read_table() -> Mapping[KubernetesVersion, Mapping[str, GateSpec]]:
    by_version: dict[KubernetesVersion, Mapping[str, GateSpec]] = {}
    for i, label in enumerate(gate_table.RELEASES):
        version = KubernetesVersion.parse(label)
        specs: dict[str, GateSpec] = {
            # component-base registers these two in every gate set.
            ALL_ALPHA: GateSpec(False, ALPHA, False),
            ALL_BETA: GateSpec(False, BETA, False),
        }
        for name, cells in gate_table.GATES.items():
            spec = _parse_cell(cells[i])
            if spec is not None:
                specs[name] = spec
        by_version[version] = MappingProxyType(specs)
    return MappingProxyType(by_version)


_SPECS = _read_table()
_DEPENDENCIES: Mapping[KubernetesVersion, Mapping[str, tuple[str, ...]]] = MappingProxyType(
    {
        KubernetesVersion.parse(label): MappingProxyType(
            {gate: deps[i] for gate, deps in gate_table.DEPENDENCIES.items() if deps[i]}
        )
        for i, label in enumerate(gate_table.RELEASES)
    }
)


def gate_specs(version: KubernetesVersion) -> Mapping[str, GateSpec]:
    """Every gate kube-scheduler of `version` knows, as it is by default."""
    return _SPECS[version]


class FeatureGateError(ValueError):
    """Feature gate settings kube-scheduler (or our core) would refuse; `problems` lists
    (gate, message) pairs, str() joins the messages."""

    def __init__(self, problems: Iterable[tuple[str, str]]) -> None:
        self.problems = tuple(problems)
        super().__init__("; ".join(message for _, message in self.problems))


def _go_bool(value: bool) -> str:
    return "true" if value else "false"


def format_settings(settings: Iterable[tuple[str, bool]]) -> str:
    """--feature-gates syntax: Name=true,Other=false."""
    return ",".join(f"{name}={_go_bool(value)}" for name, value in settings)


@dataclass(frozen=True, slots=True)
class Features:
    """The semantics of one Kubernetes release, with feature gates set as `settings` say.

    `settings` are the explicit settings (name, value), in the order given; a later setting of the
    same gate wins. Construction validates them (FeatureGateError)."""

    version: KubernetesVersion
    settings: tuple[tuple[str, bool], ...] = ()
    # The scheduler gates' values, computed once.
    _values: Mapping[str, bool] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.version not in _SPECS:
            supported = ", ".join(str(v) for v in SUPPORTED_VERSIONS)
            raise FeatureGateError(
                [("", f"Kubernetes {self.version} is not supported (supported: {supported})")]
            )
        explicit = dict(self.settings)
        specs = _SPECS[self.version]
        problems = self._unknown_or_locked(explicit, specs)
        if problems:
            raise FeatureGateError(problems)
        values, set_by = self._expand(explicit, specs)
        problems = self._dependency_problems(values)
        problems.extend(self._unimplemented_settings(values, set_by))
        if problems:
            raise FeatureGateError(problems)
        object.__setattr__(
            self, "_values", MappingProxyType({g: values[g] for g in SCHEDULER_GATES if g in values})
        )

    # ---- construction ------------------------------------------------------------------------

    def with_settings(self, settings: Mapping[str, bool] | Iterable[tuple[str, bool]]) -> Features:
        """These features with more settings on top (they win over earlier ones)."""
        more = tuple(settings.items()) if isinstance(settings, Mapping) else tuple(settings)
        if not more:
            return self
        return Features(self.version, (*self.settings, *more))

    def _unknown_or_locked(
        self, explicit: Mapping[str, bool], specs: Mapping[str, GateSpec]
    ) -> list[tuple[str, str]]:
        problems: list[tuple[str, str]] = []
        for name, value in explicit.items():
            spec = specs.get(name)
            if spec is None:
                problems.append((name, f"unrecognized feature gate: {name} ({self._where_known(name)})"))
            elif spec.locked and spec.default != value:
                problems.append(
                    (
                        name,
                        f"cannot set feature gate {name} to {_go_bool(value)}, feature is locked to "
                        f"{_go_bool(spec.default)} (Kubernetes {self.version})",
                    )
                )
        return problems

    def _where_known(self, name: str) -> str:
        others = [str(v) for v in SUPPORTED_VERSIONS if name in _SPECS[v]]
        if not others:
            return f"not a feature gate of Kubernetes {self.version}"
        verb = "has" if len(others) == 1 else "have"
        return f"Kubernetes {self.version} does not have it; {', '.join(others)} {verb} it"

    @staticmethod
    def _expand(
        explicit: Mapping[str, bool], specs: Mapping[str, GateSpec]
    ) -> tuple[dict[str, bool], dict[str, str]]:
        """Every known gate's value; AllAlpha/AllBeta set the unset gates of their stage."""
        values = {name: spec.default for name, spec in specs.items()}
        set_by: dict[str, str] = {}
        for special, stage in ((ALL_ALPHA, ALPHA), (ALL_BETA, BETA)):
            if special not in explicit:
                continue
            for name, spec in specs.items():
                if spec.stage == stage and name not in explicit and name not in (ALL_ALPHA, ALL_BETA):
                    values[name] = explicit[special]
                    set_by[name] = f"{special}={_go_bool(explicit[special])}"
        for name, value in explicit.items():
            values[name] = value
            set_by[name] = f"{name}={_go_bool(value)}"
        return values, set_by

    def _dependency_problems(self, values: Mapping[str, bool]) -> list[tuple[str, str]]:
        problems: list[tuple[str, str]] = []
        for name, needs in sorted(_DEPENDENCIES[self.version].items()):
            if not values.get(name, False):
                continue
            disabled = [dep for dep in needs if not values.get(dep, False)]
            if disabled:
                problems.append(
                    (
                        name,
                        f"{name} is enabled, but depends on features that are disabled: "
                        f"[{' '.join(disabled)}]",
                    )
                )
        return problems

    def _unimplemented_settings(
        self, values: Mapping[str, bool], set_by: Mapping[str, str]
    ) -> list[tuple[str, str]]:
        problems: list[tuple[str, str]] = []
        for name in sorted(set_by):
            implemented = IMPLEMENTED.get(name)
            if implemented is None or values[name] in implemented:
                continue
            origin = set_by[name]
            via = "" if origin.startswith(f"{name}=") else f" (set by {origin})"
            supported = " or ".join(f"{name}={_go_bool(v)}" for v in sorted(implemented, reverse=True))
            problems.append(
                (
                    name,
                    f"feature gate {name}={_go_bool(values[name])}{via} is not implemented by "
                    f"policy-scheduler (it implements {supported})",
                )
            )
        return problems

    # ---- reading -----------------------------------------------------------------------------

    def enabled(self, gate: str) -> bool:
        """A scheduler gate's value (False when this release does not have the gate: a removed
        gate's behaviour is then always on, and the plugin reading it knows which)."""
        if gate not in SCHEDULER_GATES:
            raise KeyError(f"{gate} is not a feature gate the scheduler reads")
        return self._values.get(gate, False)

    def has_gate(self, gate: str) -> bool:
        return gate in _SPECS[self.version]

    @property
    def behaviour(self) -> Behaviour:
        return BEHAVIOURS[self.version]

    def unimplemented(self) -> tuple[str, ...]:
        """Scheduler gates whose value here (the release's default) the core does not implement,
        as Name=value; empty when we decide as kube-scheduler of this release would."""
        return tuple(
            f"{name}={_go_bool(value)}"
            for name, value in sorted(self._values.items())
            if value not in IMPLEMENTED[name]
        )

    def describe(self) -> str:
        """ "v1.37" or "v1.37 with NodeDeclaredFeatures=false" for messages."""
        if not self.settings:
            return str(self.version)
        return f"{self.version} with {format_settings(dict(self.settings).items())}"


# What a profile follows when nobody said which release (unit tests, bench, a scenario without
# --kubernetes-version): the newest supported.
DEFAULT_VERSION = NEWEST_SUPPORTED


def default_features() -> Features:
    return Features(DEFAULT_VERSION)
