"""SchedulingProfiles and EvictionPolicies from the start-up's early lists (issue 12).

kopf delivers our CRDs, but only after its own start (imports, login, API discovery, a watcher
and a worker per object): on a 5000-node cluster the scheduler had its nodes and pods and then
waited for kopf to bring the first profile. So `run` also asks for these two lists early
(kube.prefetch, beside the node and pod lists), and the operator applies them before kopf runs,
through the same handlers kopf calls. kopf's own list then delivers every object again (the
stores ignore what they already have); an object of the early list that kopf's list lacks was
deleted in between, and the operator drops it once kopf has listed
(`Operator.on_kopf_listed`, called through kopf_app's indexes).
"""

from __future__ import annotations

import logging
from typing import Any

import msgspec

from policy_scheduler.kube import prefetch
from policy_scheduler.kube.paths import POLICY_LISTS

log = logging.getLogger(__name__)


class _Items(msgspec.Struct):
    items: list[dict[str, Any]] | None = None


async def take(page_size: int) -> dict[str, list[dict[str, Any]]] | None:
    """The objects of each early policy list, by path; None unless both lists were asked for
    and answered (then kopf's lists come first, as without this). Both or neither: profiles
    without their EvictionPolicies would preempt nothing for a moment, and say so in events."""
    lists: dict[str, list[dict[str, Any]]] = {}
    for path, (selectors, accept) in POLICY_LISTS.items():
        answer = await prefetch.answer(path, prefetch.first_list_query(page_size, selectors), accept)
        if answer is None or isinstance(answer, prefetch.Decoded):  # only nodes come decoded
            return None
        if answer.status != 200:  # e.g. 404 before the CRDs are installed
            log.debug("early policy list refused", extra={"resource": path, "status": answer.status})
            return None
        try:
            lists[path] = msgspec.json.decode(answer.body, type=_Items).items or []
        except msgspec.MsgspecError as exc:
            log.warning("early policy list unreadable", extra={"resource": path, "error": str(exc)})
            return None
    return lists


def names(items: list[dict[str, Any]]) -> set[str]:
    return {str((item.get("metadata") or {}).get("name", "")) for item in items}
