"""The ceiling contender: binds every pending pod of its schedulerName, round-robin, no decisions.

`python -m policy_scheduler.bench_e2e.noop_binder --kubeconfig K --scheduler-name S [--selector L]`

It lists, then watches, the unbound pods of its schedulerName and POSTs one Binding per pod with
many requests in flight: what remains is the cost of the API server (and this process) per bind,
the upper bound any scheduler can reach on this machine. With `--events` it also POSTs each
bound pod's `Scheduled` event (events.k8s.io/v1, as kube-scheduler writes it): the ceiling of a
scheduler that reports its binds. Events are written beside the binds, with their own requests in
flight, as a scheduler's event writers work: a bind never waits for the previous pod's event.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import socket
import sys
import time
from collections.abc import Coroutine, Sequence
from pathlib import Path
from typing import Any

from policy_scheduler.bench_e2e.api import JSON, ApiError, Client, Credentials
from policy_scheduler.kube.event_objects import (
    BINDING,
    NORMAL,
    SCHEDULED,
    ObjectRef,
    event_body,
    scheduled_note,
)

IN_FLIGHT = 64


class NoopBinder:
    def __init__(self, client: Client, scheduler_name: str, selector: str, events: bool = False) -> None:
        self.client = client
        self.scheduler_name = scheduler_name
        self.selector = selector
        self.events = events
        self.seen: set[str] = set()
        self.slots = asyncio.Semaphore(IN_FLIGHT)
        self.event_slots = asyncio.Semaphore(IN_FLIGHT)
        self.tasks: set[asyncio.Task[None]] = set()
        self.nodes: itertools.cycle[str] = itertools.cycle([""])

    def _params(self) -> dict[str, str]:
        params = {"fieldSelector": f"spec.schedulerName={self.scheduler_name},spec.nodeName="}
        if self.selector:
            params["labelSelector"] = self.selector
        return params

    async def run(self) -> None:
        nodes = await self.client.get("/api/v1/nodes")
        self.nodes = itertools.cycle([n["metadata"]["name"] for n in nodes["items"]])
        while True:
            listing = await self.client.get("/api/v1/pods", **self._params())
            for pod in listing["items"]:
                await self._offer(pod)
            version = str(listing["metadata"]["resourceVersion"])
            async for event in self.client.watch("/api/v1/pods", version, **self._params()):
                if event["type"] == "ADDED":
                    await self._offer(event["object"])

    async def _offer(self, pod: JSON) -> None:
        meta = pod["metadata"]
        key = f"{meta['namespace']}/{meta['name']}"
        if key in self.seen:
            return
        self.seen.add(key)
        await self.slots.acquire()
        self._spawn(self._bind(meta["namespace"], meta["name"]))

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _bind(self, namespace: str, name: str) -> None:
        node = next(self.nodes)
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": namespace},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        try:
            await self.client.post(f"/api/v1/namespaces/{namespace}/pods/{name}/binding", body)
        except ApiError as exc:
            print(f"bind {namespace}/{name}: {exc}", file=sys.stderr, flush=True)
            return
        finally:
            self.slots.release()
        if self.events:
            self._spawn(self._report(namespace, name, node))

    async def _report(self, namespace: str, name: str, node: str) -> None:
        async with self.event_slots:
            event = scheduled_event(self.scheduler_name, namespace, name, node)
            try:
                await self.client.post(f"/apis/events.k8s.io/v1/namespaces/{namespace}/events", event)
            except ApiError as exc:
                print(f"event {namespace}/{name}: {exc}", file=sys.stderr, flush=True)


def scheduled_event(scheduler_name: str, namespace: str, name: str, node: str) -> JSON:
    """The event kube-scheduler (and our EventRecorder) writes for a bound pod."""
    return event_body(
        name=f"{name}.{time.time_ns():x}",
        regarding=ObjectRef("Pod", name, namespace),
        related=None,
        type_=NORMAL,
        reason=SCHEDULED,
        action=BINDING,
        note=scheduled_note(namespace, name, node),
        now=time.time(),
        controller=scheduler_name,
        instance=f"{scheduler_name}-{socket.gethostname()}",
    )


async def _main(args: argparse.Namespace) -> None:
    connections = IN_FLIGHT * 2 if args.events else IN_FLIGHT  # the events' own requests in flight
    async with Client(Credentials.from_kubeconfig(Path(args.kubeconfig)), connections=connections) as client:
        await NoopBinder(client, args.scheduler_name, args.selector, args.events).run()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--scheduler-name", required=True)
    parser.add_argument("--selector", default="", help="label selector of the pods to bind")
    parser.add_argument("--events", action="store_true", help="also write each pod's Scheduled event")
    asyncio.run(_main(parser.parse_args(argv)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
