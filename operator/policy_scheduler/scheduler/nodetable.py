"""Columnar node state: one row per node, numpy columns per resource, label and taint set.

Rows 0..n-1 are live; removing a node moves the last row into the hole, so every column is a
contiguous prefix and plugins can work on all nodes at once. Pods (bound or assumed) update
the requested columns in place; removing them reverts the change exactly.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TypeVar, cast

import numpy as np
import numpy.typing as npt

from policy_scheduler.scheduler.model import ContainerPort, Node, Pod, Taint
from policy_scheduler.scheduler.resource_names import CPU, MEMORY, PODS

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
Rows = npt.NDArray[np.intp]
_Scalar = TypeVar("_Scalar", bound=np.generic)
_Index = TypeVar("_Index")

ABSENT = -1  # label code for "node lacks this label key"
ZONE_LABEL = "topology.kubernetes.io/zone"
REGION_LABEL = "topology.kubernetes.io/region"
HOSTNAME_LABEL = "kubernetes.io/hostname"
# Deprecated, but GetZoneKey still prefers them over the topology.kubernetes.io labels.
BETA_ZONE_LABEL = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION_LABEL = "failure-domain.beta.kubernetes.io/region"
_INITIAL_CAPACITY = 64


def zone_key(labels: dict[str, str]) -> str:
    """utilnode.GetZoneKey: region and zone joined; empty when the node has neither."""
    region = labels[BETA_REGION_LABEL] if BETA_REGION_LABEL in labels else labels.get(REGION_LABEL, "")
    zone = labels[BETA_ZONE_LABEL] if BETA_ZONE_LABEL in labels else labels.get(ZONE_LABEL, "")
    if not region and not zone:
        return ""
    return f"{region}:\x00:{zone}"


def normalize_image_name(name: str) -> str:
    """ImageLocality's normalizedImageName: add ':latest' when the name has no tag or digest."""
    if name.rfind(":") <= name.rfind("/"):
        name += ":latest"
    return name


@dataclass(slots=True)
class PodListener:
    """Callbacks for indexes that follow the table (e.g. inter-pod affinity)."""

    on_add: Callable[[Pod, int], None]
    on_remove: Callable[[Pod, int], None]
    # The filter plugin that reads this index ("" if unknown): while that plugin is skipped or
    # absent, a trial placement that is undone before anything else runs may bypass the index.
    reader: str = ""


@dataclass(slots=True)
class _LabelColumn:
    codes: npt.NDArray[np.int32]
    values: list[str] = field(default_factory=list)
    code_of: dict[str, int] = field(default_factory=dict)

    def code(self, value: str) -> int:
        code = self.code_of.get(value)
        if code is None:
            code = len(self.values)
            self.code_of[value] = code
            self.values.append(value)
        return code


class NodeTable:
    """All nodes the scheduler knows and the pods placed on them, as numpy columns."""

    def __init__(self) -> None:
        self.n = 0
        self.capacity = _INITIAL_CAPACITY
        self.nodes: list[Node] = []
        self.index: dict[str, int] = {}
        self.resource_names: list[str] = [CPU, MEMORY, PODS]
        self.resource_index: dict[str, int] = {name: i for i, name in enumerate(self.resource_names)}
        self.allocatable: IntArray = np.zeros((3, self.capacity), dtype=np.int64)
        self.requested: IntArray = np.zeros((3, self.capacity), dtype=np.int64)
        # (cpu, memory) with kube-scheduler's non-zero defaults, used only for scoring.
        self.non_zero_requested: IntArray = np.zeros((2, self.capacity), dtype=np.int64)
        self.pod_count: IntArray = np.zeros(self.capacity, dtype=np.int64)
        self.unschedulable: BoolArray = np.zeros(self.capacity, dtype=np.bool_)
        self.taint_set: npt.NDArray[np.int32] = np.zeros(self.capacity, dtype=np.int32)
        self.taint_sets: list[tuple[Taint, ...]] = [()]
        self._taint_set_id: dict[tuple[Taint, ...], int] = {(): 0}
        self.labels: dict[str, _LabelColumn] = {}
        self.pods: list[dict[str, Pod]] = []  # row -> pod key -> pod
        self.images: list[dict[str, int]] = []  # row -> image name (as the node reports it) -> size
        self.image_node_count: Counter[str] = Counter()
        # (protocol, hostPort) -> row -> host IPs in use (with multiplicity)
        self.host_ports: dict[tuple[str, int], dict[int, Counter[str]]] = {}
        self.zone_of_row: list[str] = []
        self.listeners: list[PodListener] = []
        self._shared_indexes: dict[Callable[[NodeTable], object], object] = {}
        # Bumped on every change: plugins may cache per-generation derived data.
        self.generation = 0
        # Bumped when rows are added, removed or moved (not on pod or label changes).
        self.rows_generation = 0
        self._order: Rows | None = None
        self._names: tuple[int, npt.NDArray[np.object_]] = (-1, np.empty(0, dtype=np.object_))
        self._zone_members: dict[str, list[str]] = {}

    def shared_index(self, build: Callable[[NodeTable], _Index]) -> _Index:
        """The table's index of one kind (`build`, e.g. an index class taking the table), built and
        subscribed on first use: one per table, shared by every profile's plugins."""
        index = self._shared_indexes.get(build)
        if index is None:
            index = self._shared_indexes[build] = build(self)
        return cast(_Index, index)

    # ---- nodes -------------------------------------------------------------------------------

    def __len__(self) -> int:
        return self.n

    def __contains__(self, name: str) -> bool:
        return name in self.index

    def row(self, name: str) -> int:
        return self.index[name]

    def set_node(self, node: Node) -> int:
        """Add a node or update it in place; its pods stay."""
        row = self.index.get(node.name)
        if row is None:
            row = self._append_row(node)
            self.rows_generation += 1
        else:
            old = self.nodes[row]
            self.nodes[row] = node
            self._forget_images(row)
            if zone_key(old.labels) != zone_key(node.labels):
                self._leave_zone(node.name, row)
                self._join_zone(node.name, row)
        self._write_node_columns(row, node)
        self.generation += 1
        return row

    def remove_node(self, name: str) -> list[Pod]:
        """Remove a node; returns the pods that were on it."""
        row = self.index.pop(name)
        self.rows_generation += 1
        pods = list(self.pods[row].values())
        for pod in pods:
            self._notify_remove(pod, row)
        self._forget_images(row)
        self._leave_zone(name, row)
        last = self.n - 1
        if row != last:
            self._move_row(last, row)
        self.nodes.pop()
        self.pods.pop()
        self.images.pop()
        self.zone_of_row.pop()
        self._drop_ports_of_row(last)
        self.n -= 1
        self._clear_row(last)
        self._order = None
        self.generation += 1
        return pods

    def _append_row(self, node: Node) -> int:
        if self.n == self.capacity:
            self._grow()
        row = self.n
        self.n += 1
        self.index[node.name] = row
        self.nodes.append(node)
        self.pods.append({})
        self.images.append({})
        self.zone_of_row.append("")
        self._join_zone(node.name, row)
        return row

    def _join_zone(self, name: str, row: int) -> None:
        zone = zone_key(self.nodes[row].labels)
        self.zone_of_row[row] = zone
        self._zone_members.setdefault(zone, []).append(name)
        self._order = None

    def _leave_zone(self, name: str, row: int) -> None:
        zone = self.zone_of_row[row]
        members = self._zone_members[zone]
        members.remove(name)
        if not members:
            del self._zone_members[zone]  # a zone that comes back is appended last, as upstream
        self._order = None

    def _write_node_columns(self, row: int, node: Node) -> None:
        for name in node.allocatable:
            self._ensure_resource(name)
        self.allocatable[:, row] = 0
        for name, amount in node.allocatable.items():
            self.allocatable[self.resource_index[name], row] = amount
        self.unschedulable[row] = node.unschedulable
        self.taint_set[row] = self._intern_taints(node.taints)
        for column in self.labels.values():
            column.codes[row] = ABSENT
        for key, label_value in node.labels.items():
            label_column = self.labels.get(key)
            if label_column is None:
                label_column = _LabelColumn(np.full(self.capacity, ABSENT, dtype=np.int32))
                self.labels[key] = label_column
            label_column.codes[row] = label_column.code(label_value)
        for image in node.images:
            # Upstream keys node images by their raw names; only pod images get normalized.
            for image_name in image.names:
                if image_name not in self.images[row]:
                    self.images[row][image_name] = image.size_bytes
                    self.image_node_count[image_name] += 1

    def _forget_images(self, row: int) -> None:
        for image_name in self.images[row]:
            self.image_node_count[image_name] -= 1
            if self.image_node_count[image_name] <= 0:
                del self.image_node_count[image_name]
        self.images[row] = {}

    def _intern_taints(self, taints: tuple[Taint, ...]) -> int:
        key = tuple(sorted(taints, key=lambda t: (t.key, t.value, t.effect)))
        ident = self._taint_set_id.get(key)
        if ident is None:
            ident = len(self.taint_sets)
            self.taint_sets.append(key)
            self._taint_set_id[key] = ident
        return ident

    def _ensure_resource(self, name: str) -> int:
        index = self.resource_index.get(name)
        if index is None:
            index = len(self.resource_names)
            self.resource_names.append(name)
            self.resource_index[name] = index
            extra = np.zeros((1, self.capacity), dtype=np.int64)
            self.allocatable = np.vstack([self.allocatable, extra])
            self.requested = np.vstack([self.requested, extra])
        return index

    def _grow(self) -> None:
        new = self.capacity * 2

        def grow(array: npt.NDArray[_Scalar], fill: int | bool = 0) -> npt.NDArray[_Scalar]:
            bigger: npt.NDArray[_Scalar] = np.full((*array.shape[:-1], new), fill, dtype=array.dtype)
            bigger[..., : self.capacity] = array
            return bigger

        self.allocatable = grow(self.allocatable)
        self.requested = grow(self.requested)
        self.non_zero_requested = grow(self.non_zero_requested)
        self.pod_count = grow(self.pod_count)
        self.unschedulable = grow(self.unschedulable, False)
        self.taint_set = grow(self.taint_set)
        for column in self.labels.values():
            column.codes = grow(column.codes, ABSENT)
        self.capacity = new

    def _move_row(self, src: int, dst: int) -> None:
        self.allocatable[:, dst] = self.allocatable[:, src]
        self.requested[:, dst] = self.requested[:, src]
        self.non_zero_requested[:, dst] = self.non_zero_requested[:, src]
        self.pod_count[dst] = self.pod_count[src]
        self.unschedulable[dst] = self.unschedulable[src]
        self.taint_set[dst] = self.taint_set[src]
        for column in self.labels.values():
            column.codes[dst] = column.codes[src]
        self.nodes[dst] = self.nodes[src]
        self.pods[dst] = self.pods[src]
        self.images[dst] = self.images[src]
        self.zone_of_row[dst] = self.zone_of_row[src]
        for key, users in list(self.host_ports.items()):
            if src in users:
                users[dst] = users.pop(src)
            else:
                users.pop(dst, None)
                if not users:  # the removed node was its only user
                    del self.host_ports[key]
        self.index[self.nodes[dst].name] = dst
        for pod in self.pods[dst].values():
            # Listeners key by row: tell them the pods moved.
            for listener in self.listeners:
                listener.on_remove(pod, src)
                listener.on_add(pod, dst)

    def _drop_ports_of_row(self, row: int) -> None:
        for key in [
            k for k, users in self.host_ports.items() if users.pop(row, None) is not None and not users
        ]:
            del self.host_ports[key]

    def _clear_row(self, row: int) -> None:
        self.allocatable[:, row] = 0
        self.requested[:, row] = 0
        self.non_zero_requested[:, row] = 0
        self.pod_count[row] = 0
        self.unschedulable[row] = False
        self.taint_set[row] = 0
        for column in self.labels.values():
            column.codes[row] = ABSENT

    # ---- pods --------------------------------------------------------------------------------

    def add_pod(self, pod: Pod, row: int) -> None:
        """Account a pod on a node (bound, assumed, or placed by a preemption dry run)."""
        self.pods[row][pod.key] = pod
        self._apply_pod(pod, row, 1)
        for listener in self.listeners:
            listener.on_add(pod, row)

    def remove_pod(self, pod: Pod, row: int) -> None:
        stored = self.pods[row].pop(pod.key, None)
        if stored is None:
            return
        self._apply_pod(stored, row, -1)
        self._notify_remove(stored, row)

    def _notify_remove(self, pod: Pod, row: int) -> None:
        for listener in self.listeners:
            listener.on_remove(pod, row)

    def _apply_pod(self, pod: Pod, row: int, sign: int) -> None:
        # Preemption's dry runs call this hundreds of times per cycle: locals, no copies.
        index_of = self.resource_index
        for name, value in pod.requests.items():
            index = index_of.get(name)
            if index is None:
                index = self._ensure_resource(name)  # grows the arrays: look them up after
            self.requested[index, row] += sign * value
        cpu, memory = pod.non_zero_requests
        non_zero = self.non_zero_requested
        non_zero[0, row] += sign * cpu
        non_zero[1, row] += sign * memory
        self.pod_count[row] += sign
        if pod.has_host_ports:
            for port in pod.host_ports():
                self._account_port(port, row, sign)
        self.generation += 1

    def _account_port(self, port: ContainerPort, row: int, sign: int) -> None:
        key = (port.protocol or "TCP", port.host_port)
        users = self.host_ports.setdefault(key, {})
        ips = users.setdefault(row, Counter())
        ips[port.host_ip or "0.0.0.0"] += sign
        if ips[port.host_ip or "0.0.0.0"] <= 0:
            del ips[port.host_ip or "0.0.0.0"]
        if not ips:
            del users[row]
        if not users:
            del self.host_ports[key]

    def pods_on(self, row: int) -> Iterable[Pod]:
        return self.pods[row].values()

    # ---- views -------------------------------------------------------------------------------

    def resource_row(self, name: str) -> int | None:
        return self.resource_index.get(name)

    def label_codes(self, key: str) -> npt.NDArray[np.int32]:
        """Per-row code of the value of label `key` (ABSENT where missing), live rows only."""
        column = self.labels.get(key)
        if column is None:
            return np.full(self.n, ABSENT, dtype=np.int32)
        return column.codes[: self.n]

    def label_value_code(self, key: str, value: str) -> int | None:
        column = self.labels.get(key)
        return None if column is None else column.code_of.get(value)

    def label_values(self, key: str) -> list[str]:
        column = self.labels.get(key)
        return [] if column is None else column.values

    def names_of(self, rows: Iterable[int]) -> list[str]:
        return [self.nodes[r].name for r in rows]

    def names_array(self) -> npt.NDArray[np.object_]:
        """Every row's node name, as an array to index with rows (rebuilt when rows change)."""
        generation, names = self._names
        if generation != self.rows_generation:
            names = np.array([node.name for node in self.nodes], dtype=np.object_)
            self._names = (self.rows_generation, names)
        return names

    def order(self) -> Rows:
        """Rows interleaved across zones, like kube-scheduler's nodeTree.list()."""
        if self._order is None:
            zones = list(self._zone_members.values())
            ordered: list[int] = []
            depth = max((len(m) for m in zones), default=0)
            for i in range(depth):
                for members in zones:
                    if i < len(members):
                        ordered.append(self.index[members[i]])
            self._order = np.asarray(ordered, dtype=np.intp)
        return self._order
