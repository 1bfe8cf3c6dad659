"""ImageLocality: image_locality_test.go (v1.35.4) plus the size-column cache."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.model import Node, Pod
from policy_scheduler.scheduler.nodetable import normalize_image_name
from policy_scheduler.scheduler.plugins.imagelocality import MB, ImageLocality

from ._build_noderesources import all_rows, make_node, make_pod, make_table, plugin

Images = list[tuple[tuple[str, ...], int]]

NODE_40_300_2000: Images = [
    (("gcr.io/40:latest", "gcr.io/40:v1", "gcr.io/40:v1"), 40 * MB),
    (("gcr.io/300:latest", "gcr.io/300:v1"), 300 * MB),
    (("gcr.io/2000:latest",), 2000 * MB),
]
NODE_250_10: Images = [(("gcr.io/250:latest",), 250 * MB), (("gcr.io/10:latest", "gcr.io/10:v1"), 10 * MB)]
NODE_600_40_900: Images = [
    (("gcr.io/600:latest",), 600 * MB),
    (("gcr.io/40:latest",), 40 * MB),
    (("gcr.io/900:latest",), 900 * MB),
]
NODE_300_600_900: Images = [
    (("gcr.io/300:latest",), 300 * MB),
    (("gcr.io/600:latest",), 600 * MB),
    (("gcr.io/900:latest",), 900 * MB),
]
NODE_4000_30: Images = [(("gcr.io/4000:latest",), 4000 * MB), (("gcr.io/30:latest",), 30 * MB)]
NODE_20_30_40: Images = [
    (("gcr.io/20:latest",), 20 * MB),
    (("gcr.io/30:latest",), 30 * MB),
    (("gcr.io/40:latest",), 40 * MB),
]


def nodes(*images: Images) -> list[Node]:
    return [make_node(f"node{i + 1}", images=imgs) for i, imgs in enumerate(images)]


def score(pod: Pod, node_list: list[Node]) -> list[int]:
    table = make_table(node_list)
    return plugin(ImageLocality, table).score(CycleState(), pod, all_rows(table)).tolist()  # type: ignore[no-any-return]


CASES = [
    (
        "two images spread on two nodes, prefer the larger image one",
        make_pod(images=["gcr.io/40", "gcr.io/250"]),
        nodes(NODE_40_300_2000, NODE_250_10),
        [0, 5],
    ),
    (
        "two images on one node, prefer this node",
        make_pod(images=["gcr.io/40", "gcr.io/300"]),
        nodes(NODE_40_300_2000, NODE_250_10),
        [7, 0],
    ),
    (
        "if exceed limit, use limit",
        make_pod(images=["gcr.io/10", "gcr.io/4000"]),
        nodes(NODE_4000_30, NODE_250_10),
        [100, 0],
    ),
    (
        "if exceed limit, use limit (with node which has no images present)",
        make_pod(images=["gcr.io/10", "gcr.io/4000"]),
        nodes(NODE_4000_30, NODE_250_10, []),
        [66, 0, 0],
    ),
    (
        "pod with multiple large images, node2 is preferred",
        make_pod(images=["gcr.io/300", "gcr.io/600", "gcr.io/900"]),
        nodes(NODE_600_40_900, NODE_300_600_900, []),
        [32, 36, 0],
    ),
    (
        "pod with multiple small images",
        make_pod(images=["gcr.io/30", "gcr.io/40"]),
        nodes(NODE_20_30_40, NODE_4000_30),
        [1, 0],
    ),
    (
        "include InitContainers: two images spread on two nodes, prefer the larger image one",
        make_pod(images=["gcr.io/30"], init_images=["gcr.io/300"]),
        nodes(NODE_40_300_2000, NODE_20_30_40),
        [6, 0],
    ),
]


@pytest.mark.parametrize(("pod", "node_list", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_image_locality_priority(pod: Pod, node_list: list[Node], want: list[int]) -> None:
    assert score(pod, node_list) == want


def _digest(content: str) -> str:
    return "sha256:" + hashlib.sha256(content.encode()).hexdigest()


@pytest.mark.parametrize(
    ("image", "want"),
    [
        ("root", "root:latest"),
        ("gcr.io:5000/root", "gcr.io:5000/root:latest"),
        ("root:tag", "root:tag"),
        ("root@" + _digest("root"), "root@" + _digest("root")),
    ],
)
def test_normalized_image_name(image: str, want: str) -> None:
    assert normalize_image_name(image) == want


def test_each_container_counts_even_with_the_same_image() -> None:
    # 2 containers of a 600MB image present on 1 of 1 nodes: (1200 - 23) * 100 / (2000 - 23) = 59
    pod = make_pod(images=["gcr.io/600", "gcr.io/600"])
    assert score(pod, nodes(NODE_600_40_900)) == [59]


def test_pod_without_containers_scores_zero() -> None:
    assert score(make_pod(), nodes(NODE_600_40_900)) == [0]


def test_size_columns_follow_node_changes() -> None:
    table = make_table(nodes(NODE_600_40_900, [], NODE_300_600_900))
    locality = plugin(ImageLocality, table)
    pod = make_pod(images=["gcr.io/900"])

    def run(rows: list[int] | None = None) -> list[int]:
        selected = all_rows(table) if rows is None else np.asarray(rows, dtype=np.intp)
        return locality.score(CycleState(), pod, selected).tolist()  # type: ignore[no-any-return]

    # 900MB * 2/3 = 600MB: (600 - 23) * 100 / (1000 - 23) = 59
    assert run() == [59, 0, 59]
    assert run([2, 1]) == [59, 0]
    table.set_node(make_node("node2", images=[(("gcr.io/900:latest",), 900 * MB)]))  # image pulled
    assert run() == [89, 89, 89]  # 900 * 3/3: 877 * 100 // 977
    table.remove_node("node1")  # node3 moves into row 0
    assert table.nodes[0].name == "node3"
    assert run() == [89, 89]
    table.set_node(make_node("node3"))  # image evicted
    table.set_node(make_node("node4", images=[(("gcr.io/900:latest",), 900 * MB)]))
    # 900 * 2/3 on node2 and node4
    assert run() == [0, 59, 59]
