"""ImageLocality (pkg/scheduler/framework/plugins/imagelocality), in batch form.

Favors nodes that already hold the pod's images, each image's size scaled by the share of
nodes holding it (to avoid piling pods onto the few nodes that pulled an image first). From
v1.36 the images of image volumes count too; from v1.37 they also raise the threshold (one
container's worth each).
"""

from __future__ import annotations

import operator
from collections import Counter, OrderedDict
from collections.abc import Mapping
from typing import Any

import numpy as np

from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.interfaces import MAX_NODE_SCORE, Handle, ScorePlugin, SignFragments
from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.nodetable import IntArray, Rows, normalize_image_name
from policy_scheduler.scheduler.plugins.noderesources.resource_allocation import go_div

MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB
_MAX_CACHED_IMAGES = 256


class ImageSizeColumns:
    """Per-image int64 columns (size on each row, 0 where absent) over the table's `images`.

    The table gives each row a fresh dict whenever the row's images change (node added, updated
    or moved by a removal), so comparing dict identities finds the changed rows without
    reading every dict. The snapshot keeps the dicts alive, so their ids cannot be reused.
    """

    def __init__(self) -> None:
        self._snapshot: list[dict[str, int]] = []
        self._ids = np.zeros(0, dtype=np.uint64)
        self._columns: OrderedDict[str, IntArray] = OrderedDict()

    def sync(self, images: list[dict[str, int]]) -> None:
        if len(images) == len(self._snapshot) and all(map(operator.is_, images, self._snapshot)):
            return
        ids = np.fromiter(map(id, images), dtype=np.uint64, count=len(images))
        common = min(len(ids), len(self._ids))
        stale = [int(r) for r in np.flatnonzero(ids[:common] != self._ids[:common])]
        stale.extend(range(common, len(ids)))
        for name, old in self._columns.items():
            column = np.zeros(len(images), dtype=np.int64)
            column[:common] = old[:common]
            for row in stale:
                column[row] = images[row].get(name, 0)
            self._columns[name] = column
        self._snapshot = list(images)
        self._ids = ids

    def column(self, name: str) -> IntArray:
        column = self._columns.get(name)
        if column is None:
            column = np.fromiter(
                (d.get(name, 0) for d in self._snapshot), dtype=np.int64, count=len(self._snapshot)
            )
            self._columns[name] = column
            if len(self._columns) > _MAX_CACHED_IMAGES:
                self._columns.popitem(last=False)
        else:
            self._columns.move_to_end(name)
        return column


def calculate_priority(sum_scores: IntArray, image_count: int) -> IntArray:
    max_threshold = MAX_CONTAINER_THRESHOLD * image_count
    clamped = np.where(
        sum_scores < MIN_THRESHOLD,
        MIN_THRESHOLD,
        np.where(sum_scores > max_threshold, max_threshold, sum_scores),
    )
    return go_div(MAX_NODE_SCORE * (clamped - MIN_THRESHOLD), max_threshold - MIN_THRESHOLD)


class ImageLocality(ScorePlugin):
    name = "ImageLocality"
    signs_pods = True

    def __init__(self, handle: Handle, args: Mapping[str, Any]) -> None:
        super().__init__(handle, args)
        self._sizes = ImageSizeColumns()
        behaviour = handle.features.behaviour
        self.scores_image_volumes = behaviour.image_locality_scores_image_volumes
        self.threshold_counts_image_volumes = behaviour.image_locality_threshold_counts_image_volumes

    def sign_pod(self, pod: Pod) -> SignFragments | None:
        names = sorted({normalize_image_name(c.image) for c in (*pod.containers, *pod.init_containers)})
        return (("ImageNames", tuple(names)),)

    def score(self, state: CycleState, pod: Pod, rows: Rows) -> IntArray:
        table = self.table
        total_nodes = len(table)
        containers = (*pod.init_containers, *pod.containers)
        sums = np.zeros(len(rows), dtype=np.int64)
        wanted = Counter(normalize_image_name(c.image) for c in containers)
        image_count = len(containers)
        if self.scores_image_volumes:
            volumes = pod.image_volume_references()
            wanted.update(normalize_image_name(reference) for reference in volumes)
            if self.threshold_counts_image_volumes:
                image_count += len(volumes)
        if total_nodes and any(table.image_node_count.get(image, 0) > 0 for image in wanted):
            self._sizes.sync(table.images)
        for image, times in wanted.items():
            holders = table.image_node_count.get(image, 0)
            if holders <= 0:
                continue
            spread = float(holders) / float(total_nodes)
            sizes = self._sizes.column(image)[rows]
            # scaledImageScore: int64(float64(size) * spread), once per container using the image.
            sums += times * (sizes.astype(np.float64) * spread).astype(np.int64)
        return calculate_priority(sums, image_count)
