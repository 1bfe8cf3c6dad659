"""`simulate --diff`: the pods whose outcome differs between two runs (policy in force vs with
--apply). An outcome is where the pod ends up (a node, or pending with its nomination) and
whether it was preempted; the reason a pod stays pending is shown but is not a change."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from policy_scheduler.simulate.run import PodOutcome


@dataclass(frozen=True, slots=True)
class Change:
    namespace: str
    name: str
    before: PodOutcome | None  # None: not reported by that run
    after: PodOutcome | None


def _key(o: PodOutcome) -> str:
    return f"{o.namespace}/{o.name}"


def _state(o: PodOutcome | None, victims: set[str]) -> tuple[str | None, str | None, bool, tuple[str, ...]]:
    if o is None:
        return None, None, False, ()
    return o.node, o.nominated_node, _key(o) in victims, tuple(o.preempted)


def diff_outcomes(before: Sequence[PodOutcome], after: Sequence[PodOutcome]) -> list[Change]:
    """Changed pods, in the order of `after` (then pods only `before` reported)."""
    old = {_key(o): o for o in before}
    new = {_key(o): o for o in after}
    old_victims = {v for o in before for v in o.preempted}
    new_victims = {v for o in after for v in o.preempted}
    changes: list[Change] = []
    for key in [*new, *(k for k in old if k not in new)]:
        a, b = old.get(key), new.get(key)
        if _state(a, old_victims) != _state(b, new_victims):
            ref = b or a
            assert ref is not None
            changes.append(Change(ref.namespace, ref.name, a, b))
    return changes


def describe(o: PodOutcome | None, victims: set[str]) -> str:
    """One cell of the diff table."""
    if o is None:
        return "-"
    if _key(o) in victims:
        return "preempted"
    if o.node:
        text = o.node
    elif o.nominated_node:
        text = f"<pending, nominated {o.nominated_node}>"
    else:
        text = "<pending>"
    if o.preempted:
        text += f" (preempts {', '.join(o.preempted)})"
    return text


def _json_side(o: PodOutcome | None, victims: set[str]) -> dict[str, Any] | None:
    if o is None:
        return None
    side: dict[str, Any] = {
        "node": o.node,
        "nominatedNode": o.nominated_node,
        "preempted": _key(o) in victims,
        "message": None if o.node else o.message,
    }
    if o.preempted:
        side["preempts"] = list(o.preempted)
    if o.victims:
        side["victims"] = [{"pod": k, "verdict": v} for k, v in o.victims.items()]
    return side


def changes_json(
    changes: Sequence[Change], before: Sequence[PodOutcome], after: Sequence[PodOutcome]
) -> dict[str, Any]:
    """The public JSON contract of --diff: keep it stable."""
    old_victims = {v for o in before for v in o.preempted}
    new_victims = {v for o in after for v in o.preempted}
    return {
        "changes": [
            {
                "namespace": c.namespace,
                "name": c.name,
                "before": _json_side(c.before, old_victims),
                "after": _json_side(c.after, new_victims),
            }
            for c in changes
        ]
    }


def changes_table(
    changes: Sequence[Change], before: Sequence[PodOutcome], after: Sequence[PodOutcome]
) -> str:
    old_victims = {v for o in before for v in o.preempted}
    new_victims = {v for o in after for v in o.preempted}
    rows = [("NAMESPACE", "NAME", "BEFORE", "AFTER", "MESSAGE")]
    for c in changes:
        message = (c.after.message if c.after and not c.after.node else "") or ""
        rows.append(
            (c.namespace, c.name, describe(c.before, old_victims), describe(c.after, new_victims), message)
        )
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(r[:4])) + "  " + r[4] for r in rows]
    return "\n".join(line.rstrip() for line in lines) + "\n"
