"""Read kube-scheduler's klog text log as it grows: cache events and scheduling attempts.

The reference runs with -v=2 and --vmodule=schedule_one=10,eventhandlers=4,scheduling_queue=4,
so the log names every node and pod its cache sees, every final and per-plugin score, every
binding, failure, PreEnqueue rejection and preemption.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

# I1122 03:17:03.082393   12991 schedule_one.go:898] "message" key="value" key=1
_LINE = re.compile(r'^[IWEF]\d{4} [\d:.]+\s+\d+ [\w.]+:\d+\] "((?:[^"\\]|\\.)*)"(.*)$')
_PAIR = re.compile(r'([\w ]+?)=("(?:[^"\\]|\\.)*"|\S+)')


def _unquote(value: str) -> str:
    if value.startswith('"') and value.endswith('"'):
        return bytes(value[1:-1], "utf-8").decode("unicode_escape").encode("latin-1").decode("utf-8")
    return value


def parse_line(line: str) -> tuple[str, dict[str, str]] | None:
    match = _LINE.match(line)
    if match is None:
        return None
    pairs = {key.strip(): _unquote(value) for key, value in _PAIR.findall(match.group(2))}
    return _unquote(f'"{match.group(1)}"'), pairs


@dataclass(slots=True)
class Attempt:
    """One scheduling attempt of one pod, as the log tells it."""

    scores: dict[str, int] = field(default_factory=dict)  # node -> final score
    plugin_scores: dict[str, dict[str, int]] = field(default_factory=dict)  # node -> plugin -> weighted
    outcome: str = ""  # "" while running, then bound | unschedulable | error
    node: str = ""
    feasible: int = 0
    message: str = ""
    preemption_node: str = ""


@dataclass(slots=True)
class PodLog:
    attempts: list[Attempt] = field(default_factory=list)
    # logged by the asynchronous preemption, often after the next attempt began
    victims: list[str] = field(default_factory=list)
    preemption_done: bool = False
    gated: bool = False
    added: bool = False
    added_at: int = 0  # len(cache_ops) when the pod entered the queue
    deleted_unscheduled: bool = False

    def current(self) -> Attempt:
        if not self.attempts:
            self.attempts.append(Attempt())
        return self.attempts[-1]


class SchedulerLog:
    """Incrementally parsed log; call `poll()` to read what was appended since."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._offset = 0
        self._partial = ""
        self.nodes_added: set[str] = set()
        self.nodes_deleted: set[str] = set()
        self.scheduled_added: set[str] = set()
        self.scheduled_deleted: set[str] = set()
        self.pods: dict[str, PodLog] = defaultdict(PodLog)
        # (op, pod key, node or "") in log order: what changed the cache's pod lists
        self.cache_ops: list[tuple[str, str, str]] = []
        self.errors: list[str] = []

    def poll(self) -> None:
        try:
            with self.path.open("rb") as handle:
                handle.seek(self._offset)
                data = handle.read()
        except FileNotFoundError:
            return
        self._offset += len(data)
        text = self._partial + data.decode("utf-8", errors="replace")
        lines = text.split("\n")
        self._partial = lines.pop()
        for line in lines:
            parsed = parse_line(line)
            if parsed is not None:
                self._handle(*parsed)

    def _handle(self, message: str, kv: dict[str, str]) -> None:
        handler = _HANDLERS.get(message)
        if handler is not None:
            handler(self, kv)

    # one method per log message

    def _node_added(self, kv: dict[str, str]) -> None:
        self.nodes_added.add(kv["node"])
        self.nodes_deleted.discard(kv["node"])

    def _node_deleted(self, kv: dict[str, str]) -> None:
        self.nodes_deleted.add(kv["node"])
        self.nodes_added.discard(kv["node"])

    def _scheduled_added(self, kv: dict[str, str]) -> None:
        self.scheduled_added.add(kv["pod"])
        self.cache_ops.append(("add", kv["pod"], ""))

    def _scheduled_updated(self, kv: dict[str, str]) -> None:
        self.cache_ops.append(("update", kv["pod"], ""))

    def _scheduled_deleted(self, kv: dict[str, str]) -> None:
        self.scheduled_deleted.add(kv["pod"])
        self.cache_ops.append(("delete", kv["pod"], ""))

    def _unscheduled_added(self, kv: dict[str, str]) -> None:
        podlog = self.pods[kv["pod"]]
        podlog.added, podlog.added_at = True, len(self.cache_ops)

    def _unscheduled_deleted(self, kv: dict[str, str]) -> None:
        self.pods[kv["pod"]].deleted_unscheduled = True

    def _attempt(self, kv: dict[str, str]) -> None:
        self.pods[kv["pod"]].attempts.append(Attempt())

    def _plugin_score(self, kv: dict[str, str]) -> None:
        attempt = self.pods[kv["pod"]].current()
        attempt.plugin_scores.setdefault(kv["node"], {})[kv["plugin"]] = int(kv["score"])

    def _final_score(self, kv: dict[str, str]) -> None:
        self.pods[kv["pod"]].current().scores[kv["node"]] = int(kv["score"])

    def _bound(self, kv: dict[str, str]) -> None:
        attempt = self.pods[kv["pod"]].current()
        attempt.outcome, attempt.node, attempt.feasible = "bound", kv["node"], int(kv["feasibleNodes"])
        self.cache_ops.append(("assume", kv["pod"], kv["node"]))

    def _no_fit(self, kv: dict[str, str]) -> None:
        attempt = self.pods[kv["pod"]].current()
        attempt.outcome, attempt.message = "unschedulable", kv.get("err", "")

    def _error(self, kv: dict[str, str]) -> None:
        if "pod" in kv:
            attempt = self.pods[kv["pod"]].current()
            attempt.outcome, attempt.message = "error", kv.get("err", "")
        self.errors.append(str(kv))

    def _preemption_target(self, kv: dict[str, str]) -> None:
        self.pods[kv["pod"]].current().preemption_node = kv["node"]

    def _victim(self, kv: dict[str, str]) -> None:
        self.pods[kv["preemptor"]].victims.append(kv["victim"])

    def _preemption_done(self, kv: dict[str, str]) -> None:
        self.pods[kv["preemptor"]].preemption_done = True

    def _pre_enqueue(self, kv: dict[str, str]) -> None:
        if kv.get("plugin") == "SchedulingGates":
            self.pods[kv["pod"]].gated = True


_HANDLERS = {
    "Add event for node": SchedulerLog._node_added,
    "Delete event for node": SchedulerLog._node_deleted,
    "Add event for scheduled pod": SchedulerLog._scheduled_added,
    "Update event for scheduled pod": SchedulerLog._scheduled_updated,
    "Delete event for scheduled pod": SchedulerLog._scheduled_deleted,
    "Add event for unscheduled pod": SchedulerLog._unscheduled_added,
    "Delete event for unscheduled pod": SchedulerLog._unscheduled_deleted,
    "Attempting to schedule pod": SchedulerLog._attempt,
    "Plugin scored node for pod": SchedulerLog._plugin_score,
    "Calculated node's final score for pod": SchedulerLog._final_score,
    "Successfully bound pod to node": SchedulerLog._bound,
    "Unable to schedule pod; no fit; waiting": SchedulerLog._no_fit,
    "Unable to schedule pod; no nodes are registered to the cluster; waiting": SchedulerLog._no_fit,
    "Error scheduling pod; retrying": SchedulerLog._error,
    "the target node for the preemption is determined": SchedulerLog._preemption_target,
    "Preemptor Pod preempted victim Pod": SchedulerLog._victim,
    "Async Preemption finished completely": SchedulerLog._preemption_done,
    "Status after running PreEnqueue plugin": SchedulerLog._pre_enqueue,
}
