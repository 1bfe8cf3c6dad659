"""Checks across the validated objects, as the operator's stores make them: an object defined
twice, a profile's evictionPolicyName, two profiles serving one schedulerName."""

from __future__ import annotations

from collections.abc import Sequence

from policy_scheduler.policy import constants as c
from policy_scheduler.validate.objects import Checked
from policy_scheduler.validate.report import REFERENCE, Problem


def cross_checks(checked: Sequence[tuple[str, Checked]]) -> list[Problem]:
    """`checked` in input order: the first of two objects sharing a name or schedulerName wins,
    as the older object does in the cluster."""
    problems: list[Problem] = []
    first: dict[tuple[str, str], str] = {}
    checked = [(file, obj) for file, obj in checked if obj.name]  # a nameless one has its error
    for file, obj in checked:
        key = (obj.kind, obj.name)
        if key in first:
            message = f"duplicate {obj.kind} {obj.name!r} (also in {first[key]}): the last one applied wins"
            problems.append(Problem(file, _ident(obj), "metadata.name", message, REFERENCE))
        first.setdefault(key, file)
    policies = {o.name: not o.errors for _, o in checked if o.kind == c.EVICTION_POLICY_KIND}
    served_by: dict[str, str] = {}
    for file, obj in checked:
        if obj.kind != c.SCHEDULING_PROFILE_KIND or not obj.stored:
            continue
        policy = (obj.body.get("spec") or {}).get("evictionPolicyName")
        if policy and policy not in policies:
            message = f"no EvictionPolicy named {policy!r} among the validated files"
            problems.append(Problem(file, _ident(obj), "spec.evictionPolicyName", message, REFERENCE))
        elif policy and not policies[policy]:
            message = f"EvictionPolicy {policy!r} is invalid (see its problems): the operator rejects it"
            problems.append(Problem(file, _ident(obj), "spec.evictionPolicyName", message, REFERENCE))
        if obj.profile is None:
            continue  # rejected on its own: it serves no schedulerName
        scheduler = obj.profile.scheduler_name
        owner = served_by.setdefault(scheduler, obj.name)
        if owner != obj.name:
            message = f"{scheduler!r} is already served by SchedulingProfile {owner!r}"
            problems.append(Problem(file, _ident(obj), "spec.schedulerName", message, REFERENCE))
    return problems


def _ident(obj: Checked) -> str:
    return f"{obj.kind}/{obj.name}"
