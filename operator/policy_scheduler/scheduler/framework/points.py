"""A profile's plugins instantiated once each and wired to the extension points they implement."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from policy_scheduler.scheduler.config import ResolvedProfile
from policy_scheduler.scheduler.framework.interfaces import (
    BindPlugin,
    FilterPlugin,
    PermitPlugin,
    Plugin,
    PostBindPlugin,
    PostFilterPlugin,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
)
from policy_scheduler.scheduler.framework.outcomes import FrameworkError


@dataclass(slots=True)
class Points:
    pre_enqueue: list[PreEnqueuePlugin] = field(default_factory=list)
    queue_sort: list[QueueSortPlugin] = field(default_factory=list)
    pre_filter: list[PreFilterPlugin] = field(default_factory=list)
    filter: list[FilterPlugin] = field(default_factory=list)
    post_filter: list[PostFilterPlugin] = field(default_factory=list)
    pre_score: list[PreScorePlugin] = field(default_factory=list)
    score: list[tuple[ScorePlugin, int]] = field(default_factory=list)
    reserve: list[ReservePlugin] = field(default_factory=list)
    permit: list[PermitPlugin] = field(default_factory=list)
    pre_bind: list[PreBindPlugin] = field(default_factory=list)
    bind: list[BindPlugin] = field(default_factory=list)
    post_bind: list[PostBindPlugin] = field(default_factory=list)


_POINT_TYPES: dict[str, tuple[str, type[Plugin]]] = {
    "preEnqueue": ("pre_enqueue", PreEnqueuePlugin),
    "queueSort": ("queue_sort", QueueSortPlugin),
    "preFilter": ("pre_filter", PreFilterPlugin),
    "filter": ("filter", FilterPlugin),
    "postFilter": ("post_filter", PostFilterPlugin),
    "preScore": ("pre_score", PreScorePlugin),
    "reserve": ("reserve", ReservePlugin),
    "permit": ("permit", PermitPlugin),
    "preBind": ("pre_bind", PreBindPlugin),
    "bind": ("bind", BindPlugin),
    "postBind": ("post_bind", PostBindPlugin),
}


def build_points(profile: ResolvedProfile, instance: Callable[[str], Plugin]) -> Points:
    """The profile's plugins per extension point; `instance` returns one shared instance per name."""
    points = Points()
    for point, refs in profile.points.items():
        for ref in refs:
            plugin = instance(ref.name)
            if point == "score":
                if not isinstance(plugin, ScorePlugin):
                    raise FrameworkError(f"plugin {ref.name} does not implement score")
                points.score.append((plugin, ref.weight or 1))
                continue
            attr, base = _POINT_TYPES[point]
            if not isinstance(plugin, base):
                raise FrameworkError(f"plugin {ref.name} does not implement {point}")
            getattr(points, attr).append(plugin)
    if len(points.queue_sort) != 1:
        raise FrameworkError("a profile needs exactly one queueSort plugin")
    if not points.bind:
        raise FrameworkError("a profile needs at least one bind plugin")
    return points


def batchable_signers(points: Points) -> list[Plugin] | None:
    """computeBatchablePlugins: the plugins that sign pods, or None (signatures off) unless every
    (pre)filter/(pre)score plugin signs."""
    candidates = [*points.pre_filter, *points.filter, *points.pre_score]
    candidates += [plugin for plugin, _ in points.score]
    signers: list[Plugin] = list({p.name: p for p in candidates}.values())
    return signers if all(p.signs_pods for p in signers) else None
