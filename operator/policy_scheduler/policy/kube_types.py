"""Kubernetes core shapes used inside policy objects, with apimachinery's validation rules.

LabelSelector follows metav1 validation (ValidateLabelSelectorRequirement); NodeAffinity follows
component-helpers' nodeaffinity.NewNodeSelector/NewPreferredSchedulingTerms, which is what
NodeAffinityArgs validation runs; TopologySpreadConstraint is core/v1's JSON shape.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, ConfigDict, Field, model_validator

from policy_scheduler.policy.base import SpecModel, cel_rule, validations
from policy_scheduler.policy.errors import field_error
from policy_scheduler.scheduler.selectors import (
    field_requirement_problems,
    label_key_errors,
    label_value_errors,
    node_requirement_problems,
)

_DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN_PATTERN = rf"^{_DNS1123_LABEL}(\.{_DNS1123_LABEL})*$"


def qualified_name_problem(value: str) -> str | None:
    """validation.IsQualifiedName (the core's label-key check), or None when valid."""
    return "; ".join(label_key_errors(value)) or None


def label_value_problem(value: str) -> str | None:
    """validation.IsValidLabelValue (the core's check), or None when valid."""
    return "; ".join(label_value_errors(value)) or None


def _label_key(value: str) -> str:
    problem = qualified_name_problem(value)
    if problem:
        raise ValueError(f"invalid label key {value!r}: {problem}")
    return value


def _label_value(value: str) -> str:
    problem = label_value_problem(value)
    if problem:
        raise ValueError(f"invalid label value {value!r}: {problem}")
    return value


LabelKey = Annotated[str, AfterValidator(_label_key)]
LabelValue = Annotated[str, AfterValidator(_label_value)]

_SELECTOR_VALUES_RULE = cel_rule(
    "self.operator in ['In', 'NotIn'] ? (has(self.values) && size(self.values) > 0) "
    ": (!has(self.values) || size(self.values) == 0)",
    "values must be non-empty when operator is In or NotIn, and empty when it is Exists or DoesNotExist",
    ".values",
)


class LabelSelectorRequirement(SpecModel):
    """A label selector requirement: a key, an operator and a set of values."""

    model_config = ConfigDict(json_schema_extra=validations(_SELECTOR_VALUES_RULE))

    key: LabelKey = Field(max_length=317, description="The label key that the selector applies to.")
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"] = Field(
        description="How the key relates to the values: In, NotIn, Exists or DoesNotExist."
    )
    values: list[LabelValue] = Field(
        default_factory=list,
        max_length=64,
        description="The values to compare against. Must be non-empty for In and NotIn and empty for "
        "Exists and DoesNotExist.",
    )

    @model_validator(mode="after")
    def _values_match_operator(self) -> LabelSelectorRequirement:
        if self.operator in ("In", "NotIn") and not self.values:
            raise field_error("values", "must be specified when `operator` is 'In' or 'NotIn'")
        if self.operator in ("Exists", "DoesNotExist") and self.values:
            raise field_error("values", "may not be specified when `operator` is 'Exists' or 'DoesNotExist'")
        return self


class LabelSelector(SpecModel):
    """A Kubernetes label selector. The requirements are ANDed; an empty selector matches everything."""

    match_labels: dict[LabelKey, LabelValue] = Field(
        default_factory=dict,
        description="Labels that must all be present with exactly these values. Equivalent to a "
        "matchExpressions entry with operator In and a single value.",
    )
    match_expressions: list[LabelSelectorRequirement] = Field(
        default_factory=list,
        max_length=32,
        description="Label selector requirements; all of them must match.",
    )


class NodeSelectorRequirement(SpecModel):
    """A node selector requirement: a key, an operator and a set of values."""

    key: str = Field(description="The label key (or, in matchFields, the field) the selector applies to.")
    operator: str = Field(description="In, NotIn, Exists, DoesNotExist, Gt or Lt (matchFields: In or NotIn).")
    values: list[str] = Field(default_factory=list, description="The values to compare against.")


class NodeSelectorTerm(SpecModel):
    """Node selector requirements; a node matches the term when it matches all of them."""

    match_expressions: list[NodeSelectorRequirement] = Field(
        default_factory=list, description="Requirements on node labels."
    )
    match_fields: list[NodeSelectorRequirement] = Field(
        default_factory=list, description="Requirements on node fields (only metadata.name is supported)."
    )

    @model_validator(mode="after")
    def _requirements_parse(self) -> NodeSelectorTerm:
        # Pydantic reports one error per validator, so report the first problem found.
        # The core's validation (labels.NewRequirement), so policy and scheduler agree exactly.
        for i, req in enumerate(self.match_expressions):
            for problem in node_requirement_problems(req.key, req.operator, req.values):
                raise field_error(f"matchExpressions[{i}].{problem.path}", problem.message)
        for i, req in enumerate(self.match_fields):
            for problem in field_requirement_problems(req.operator, req.values):
                raise field_error(f"matchFields[{i}].{problem.path}", problem.message)
        return self

    def is_empty(self) -> bool:
        return not self.match_expressions and not self.match_fields


class NodeSelector(SpecModel):
    """A list of node selector terms; a node matches when it matches any term (terms are ORed)."""

    node_selector_terms: list[NodeSelectorTerm] = Field(description="The terms, ORed.")


class PreferredSchedulingTerm(SpecModel):
    """A weighted preference: nodes matching `preference` get `weight` added to their score."""

    weight: int = Field(description="Weight added for matching nodes, in the range 1-100.")
    preference: NodeSelectorTerm = Field(description="The node selector term.")


class NodeAffinity(SpecModel):
    """core/v1 NodeAffinity."""

    required_during_scheduling_ignored_during_execution: NodeSelector | None = Field(
        None, description="Nodes must match this selector."
    )
    preferred_during_scheduling_ignored_during_execution: list[PreferredSchedulingTerm] = Field(
        default_factory=list, description="Nodes matching these terms are preferred."
    )


class TopologySpreadConstraint(SpecModel):
    """core/v1 TopologySpreadConstraint."""

    max_skew: int = Field(description="The maximum permitted difference in matching pods between domains.")
    topology_key: str = Field(description="The node label that defines topology domains.")
    when_unsatisfiable: str = Field(description="DoNotSchedule or ScheduleAnyway.")
    label_selector: LabelSelector | None = Field(None, description="Selects the pods that are counted.")
    min_domains: int | None = Field(None, description="The minimum number of eligible domains.")
    node_affinity_policy: Literal["Honor", "Ignore"] | None = Field(
        None, description="Whether the pod's node affinity applies when counting domains."
    )
    node_taints_policy: Literal["Honor", "Ignore"] | None = Field(
        None, description="Whether node taints apply when counting domains."
    )
    match_label_keys: list[str] = Field(
        default_factory=list, description="Pod label keys whose values are added to the selector."
    )
