"""Selector and node-inclusion helpers for PodTopologySpread, on top of the shared matchers.

Label selectors are the shared CompiledLabelSelector (metav1.LabelSelectorAsSelector): a nil
selector matches nothing, an empty one everything. An empty selector is also `Empty()`, which
makes countPodsMatchSelector count 0 while Selector.Matches (self match, AddPod) is true.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.nodetable import BoolArray, NodeTable, Rows
from policy_scheduler.scheduler.plugins.tainttoleration import has_untolerated_do_not_schedule_taint
from policy_scheduler.scheduler.selectors import IN, CompiledLabelSelector

Selector = CompiledLabelSelector


def is_empty(selector: Selector) -> bool:
    """labels.Selector.Empty(): no requirements; the nil selector (Nothing) is not empty."""
    return not selector.nothing and not selector.requirements


def merge_label_set(match_labels: Mapping[str, str], selector: Selector) -> Selector:
    """mergeLabelSetWithSelector: `key In [value]` per label, ANDed with the selector's
    requirements; Nothing has no requirements to merge and stays Nothing."""
    if selector.nothing:
        return selector
    merged = tuple((key, IN, frozenset((value,))) for key, value in match_labels.items())
    return CompiledLabelSelector(merged + selector.requirements)


def tolerated_mask(table: NodeTable, pod: Pod, rows: Rows) -> BoolArray:
    """Rows whose NoSchedule/NoExecute taints the pod all tolerates, decided per taint set."""
    ids = table.taint_set[rows]
    lookup = np.zeros(len(table.taint_sets), dtype=np.bool_)
    tolerations = tuple(pod.tolerations)
    for ident in np.unique(ids):
        taints = table.taint_sets[int(ident)]
        lookup[ident] = not has_untolerated_do_not_schedule_taint(taints, tolerations)
    return lookup[ids]
