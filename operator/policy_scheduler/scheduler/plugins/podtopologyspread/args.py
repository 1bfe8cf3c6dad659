"""PodTopologySpreadArgs: v1 defaults and ValidatePodTopologySpreadArgs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Self

from policy_scheduler.scheduler.field_errors import Problem
from policy_scheduler.scheduler.framework.plugin_args import PluginArgs
from policy_scheduler.scheduler.model import TopologySpreadConstraint
from policy_scheduler.scheduler.plugins.podtopologyspread.common import (
    DO_NOT_SCHEDULE,
    LIST_DEFAULTING,
    SCHEDULE_ANYWAY,
    SYSTEM_DEFAULTING,
)
from policy_scheduler.scheduler.selectors import label_key_errors, to_label_selector

DEFAULTING_TYPES = (LIST_DEFAULTING, SYSTEM_DEFAULTING)  # sorted, as upstream lists them
SCHEDULE_ACTIONS = (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY)


def _constraint_from_json(raw: Mapping[str, Any]) -> TopologySpreadConstraint:
    return TopologySpreadConstraint(
        max_skew=int(raw.get("maxSkew", 0)),
        topology_key=str(raw.get("topologyKey", "")),
        when_unsatisfiable=str(raw.get("whenUnsatisfiable", "")),
        label_selector=to_label_selector(raw.get("labelSelector")),
        min_domains=raw.get("minDomains"),
        node_affinity_policy=raw.get("nodeAffinityPolicy"),
        node_taints_policy=raw.get("nodeTaintsPolicy"),
        match_label_keys=tuple(raw.get("matchLabelKeys") or ()),
    )


def _constraint_json(c: TopologySpreadConstraint) -> dict[str, Any]:
    out: dict[str, Any] = {
        "maxSkew": c.max_skew,
        "topologyKey": c.topology_key,
        "whenUnsatisfiable": c.when_unsatisfiable,
    }
    optional = {
        "minDomains": c.min_domains,
        "nodeAffinityPolicy": c.node_affinity_policy,
        "nodeTaintsPolicy": c.node_taints_policy,
    }
    out.update({k: v for k, v in optional.items() if v is not None})
    if c.match_label_keys:
        out["matchLabelKeys"] = list(c.match_label_keys)
    return out


@dataclass(frozen=True, slots=True)
class PodTopologySpreadArgs(PluginArgs):
    default_constraints: tuple[TopologySpreadConstraint, ...] = ()
    defaulting_type: str = SYSTEM_DEFAULTING

    @classmethod
    def defaulted(cls, raw: Mapping[str, Any]) -> Self:
        """SetDefaults_PodTopologySpreadArgs: defaultingType System when unset."""
        return cls(
            tuple(_constraint_from_json(c) for c in raw.get("defaultConstraints") or ()),
            str(raw.get("defaultingType") or SYSTEM_DEFAULTING),
        )

    def problems(self) -> list[Problem]:
        """ValidatePodTopologySpreadArgs."""
        found: list[Problem] = []
        if self.defaulting_type not in DEFAULTING_TYPES:
            found.append(
                Problem("defaultingType", self.defaulting_type, "", DEFAULTING_TYPES, kind="NotSupported")
            )
        elif self.defaulting_type == SYSTEM_DEFAULTING and self.default_constraints:
            found.append(
                Problem("defaultingType", self.defaulting_type, "when .defaultConstraints are not empty")
            )
        seen: set[tuple[str, str]] = set()
        for i, c in enumerate(self.default_constraints):
            path = f"defaultConstraints[{i}]"
            if c.max_skew <= 0:
                found.append(Problem(f"{path}.maxSkew", c.max_skew, "not in valid range (0, inf)"))
            if not c.topology_key:
                found.append(Problem(f"{path}.topologyKey", None, "can not be empty", kind="Required"))
            elif key_errors := label_key_errors(c.topology_key):
                found.append(Problem(f"{path}.topologyKey", c.topology_key, "; ".join(key_errors)))
            if not c.when_unsatisfiable:
                found.append(Problem(f"{path}.whenUnsatisfiable", None, "can not be empty", kind="Required"))
            elif c.when_unsatisfiable not in SCHEDULE_ACTIONS:
                found.append(
                    Problem(
                        f"{path}.whenUnsatisfiable",
                        c.when_unsatisfiable,
                        "",
                        SCHEDULE_ACTIONS,
                        kind="NotSupported",
                    )
                )
            if c.label_selector is not None:
                found.append(
                    Problem(
                        f"{path}.labelSelector",
                        None,
                        "constraint must not define a selector, as they deduced for each pod",
                        kind="Forbidden",
                    )
                )
            pair = (c.topology_key, c.when_unsatisfiable)
            if pair in seen:
                found.append(Problem(path, f"{{{pair[0]}, {pair[1]}}}", "", kind="Duplicate"))
            seen.add(pair)
        return found

    def to_json(self) -> dict[str, Any]:
        return {
            "defaultConstraints": [_constraint_json(c) for c in self.default_constraints],
            "defaultingType": self.defaulting_type,
        }
