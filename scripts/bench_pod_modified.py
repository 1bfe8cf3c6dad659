"""Micro-benchmark (issue 12): CPU per assigned-pod MODIFIED watch event whose only change is
status.conditions/containerStatuses/resourceVersion, fed through the operator's Informer line handler.

Run: .venv/bin/python scripts/bench_pod_modified.py [--profile]
"""

from __future__ import annotations

import json
import sys
import time

from policy_scheduler.apiobjects import convert, structs
from policy_scheduler.kube.informer import Informer
from policy_scheduler.scheduler.engine import Engine
from policy_scheduler.scheduler.model import Node

N_NODES, N_PODS, ROUNDS = 100, 2000, 5


def pod(i: int, rv: int) -> dict:
    return {
        "metadata": {
            "name": f"p{i}",
            "namespace": "ns",
            "uid": f"u{i}",
            "resourceVersion": str(rv),
            "labels": {"app": f"a{i % 10}"},
        },
        "spec": {
            "nodeName": f"n{i % N_NODES}",
            "schedulerName": "default-scheduler",
            "containers": [
                {"name": "c", "image": "x", "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}
            ],
        },
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
            "containerStatuses": [
                {
                    "name": "c",
                    "ready": True,
                    "restartCount": rv,
                    "image": "x",
                    "imageID": "y",
                    "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}},
                }
            ],
        },
    }


def main() -> None:
    engine = Engine()
    for n in range(N_NODES):
        engine.node_added(Node(name=f"n{n}", allocatable={"cpu": 64000, "memory": 2**36, "pods": 110}))
    inf = Informer(
        None,
        "/api/v1/pods",
        structs.Pod,
        convert.pod_from_api_or_malformed,
        on_add=engine.pod_added,
        on_update=engine.pod_updated,
        on_delete=engine.pod_deleted,
    )
    rv = 1
    for i in range(N_PODS):
        inf._handle_line(json.dumps({"type": "ADDED", "object": pod(i, rv)}).encode())
        rv += 1
    lines = []
    for _ in range(ROUNDS):
        for i in range(N_PODS):
            lines.append(json.dumps({"type": "MODIFIED", "object": pod(i, rv)}).encode())
            rv += 1
    if "--profile" in sys.argv:
        import cProfile
        import pstats

        prof = cProfile.Profile()
        prof.enable()
    start = time.process_time()
    for line in lines:
        inf._handle_line(line)
    spent = time.process_time() - start
    if "--profile" in sys.argv:
        prof.disable()
        pstats.Stats(prof).sort_stats("cumulative").print_stats(25)
    print(f"{len(lines)} MODIFIED events: {spent * 1e6 / len(lines):.1f} us CPU/event")


main()
