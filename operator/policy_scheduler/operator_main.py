"""`policy-scheduler run`: the operator and its scheduler in one asyncio program.

- our own list+watch of Pods, Nodes and Namespaces feeds the engine (kopf never sees them);
- kopf (standalone) feeds SchedulingProfiles into the ProfileStore, which validates them and
  swaps the live profiles;
- the engine schedules only while this replica holds the Lease; standbys keep caches warm;
- status writes for our CRs are batched; /metrics, /livez, /readyz on one aiohttp server.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import logging
import signal
from typing import Any

import kopf
from kopf._core.engines import peering  # the Identity type is not re-exported by kopf

from policy_scheduler.apiobjects import structs
from policy_scheduler.apiobjects.convert import (
    namespace_from_api,
    node_from_api,
    pdb_from_api,
    pod_from_api_or_malformed,
    pod_from_decode_failure,
)
from policy_scheduler.controllers import kopf_app
from policy_scheduler.controllers.eviction_policy_store import EvictionPolicyStore
from policy_scheduler.controllers.priorityclass_mirror import MirrorController, pod_priority_counter
from policy_scheduler.controllers.profile_store import ProfileRecord, ProfileStore, compile_profile_spec
from policy_scheduler.controllers.selector import parse_selector
from policy_scheduler.kube.api_binder import ApiBinder
from policy_scheduler.kube.client import make_api_client
from policy_scheduler.kube.crdinstall import install_crds
from policy_scheduler.kube.crstatus import StatusWriter
from policy_scheduler.kube.events import EventRecorder, ObjectRef
from policy_scheduler.kube.evictor import Evictor, preemption_services
from policy_scheduler.kube.health_server import start_server
from policy_scheduler.kube.informer import NAMESPACES, NODES, PDBS, PODS, Informer
from policy_scheduler.kube.leader import AlwaysLeader, LeaderElector, default_identity
from policy_scheduler.kube.owner_index import OWNER_RESOURCES, OwnerIndex
from policy_scheduler.kube.pod_reporter import PodReporter
from policy_scheduler.metrics import extension_point_duration, pending_pods
from policy_scheduler.policy.constants import API_VERSION, SCHEDULING_PROFILE_KIND
from policy_scheduler.scheduler.engine import Engine
from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.plugins.podtopologyspread import OWNER_SELECTORS_SERVICE

log = logging.getLogger(__name__)

# As kube-scheduler: terminal pods hold no resources and are never scheduled.
POD_FIELD_SELECTOR = "status.phase!=Succeeded,status.phase!=Failed"
PROFILES = "schedulingprofiles"


def _observe_extension_point(profile: str, point: str, status: str, seconds: float) -> None:
    extension_point_duration.labels(point, status, profile).observe(seconds)


class Operator:
    def __init__(self, api: Any, args: argparse.Namespace) -> None:
        self.api = api
        self.args = args
        identity = args.identity or default_identity()
        self.identity = identity
        self.failed = False
        self.leader: LeaderElector | AlwaysLeader = (
            LeaderElector(api, namespace=args.lease_namespace, name=args.lease_name, identity=identity)
            if args.leader_elect
            else AlwaysLeader()
        )
        self.events = EventRecorder(api, instance=identity)
        # Preemption: the evictor and the plugin's services reach the stores built below lazily.
        self.evictor = Evictor(
            api,
            self.events,
            is_leader=self.leader.is_leader,
            policy_lookup=lambda scheduler: self.policies.settings_for_scheduler(scheduler),
            pod_lookup=lambda key: self.engine.unassigned.get(key),
            requeue=lambda pod: self.engine.queue.activate([pod]),
            on_record=lambda policy, entry: self.policies.record(policy, entry),
        )
        self.reporter = PodReporter(
            api, self.events, is_leader=self.leader.is_leader, on_preempt=self.evictor.on_preempt
        )
        services = preemption_services(
            lambda: list(self.pdbs.store.values()),
            lambda scheduler: self.policies.policy_for_scheduler(scheduler),
            self.evictor.in_progress,
        )
        # PodTopologySpread's default constraints select pods by their Services and controllers.
        self.owners = OwnerIndex()
        services[OWNER_SELECTORS_SERVICE] = self.owners.owner_selectors
        self.engine = Engine(
            hooks=self.reporter, binder=ApiBinder(api), observe=_observe_extension_point, services=services
        )
        self.status = StatusWriter(api, is_leader=self.leader.is_leader)
        self.profiles = ProfileStore(
            compile_profile_spec,
            self.engine.set_profiles,
            eviction_policy_problem=lambda name: self.policies.problem(name),
            notify=self._profile_event,
        )
        self.policies = EvictionPolicyStore(self.profiles, self.status)
        self.pdbs = Informer(api, PDBS, structs.PodDisruptionBudget, pdb_from_api)
        self.owner_informers: list[Informer[Any, Any]] = [
            Informer(
                api,
                path,
                item_type,
                convert,
                on_add=self.owners.add,
                on_update=self.owners.update,
                on_delete=self.owners.delete,
            )
            for path, item_type, convert in OWNER_RESOURCES
        ]
        self.namespace_labels: dict[str, dict[str, str]] = {}
        self.profile_selector = parse_selector(getattr(args, "profile_selector", "") or "")
        self.pods: Informer[structs.Pod, Pod] = Informer(
            api,
            PODS,
            structs.Pod,
            pod_from_api_or_malformed,
            on_add=self.engine.pod_added,
            on_update=self.engine.pod_updated,
            on_delete=self._pod_deleted,
            on_decode_failure=pod_from_decode_failure,
            field_selector=POD_FIELD_SELECTOR,
        )
        self.nodes = Informer(
            api,
            NODES,
            structs.Node,
            node_from_api,
            on_add=self.engine.node_added,
            on_update=self.engine.node_updated,
            on_delete=self.engine.node_deleted,
        )
        self.namespaces = Informer(
            api,
            NAMESPACES,
            structs.Namespace,
            namespace_from_api,
            on_add=self._namespace_changed,
            on_update=lambda _o, n: self._namespace_changed(n),
            on_delete=self._namespace_deleted,
        )

    def _pod_deleted(self, pod: Pod) -> None:
        self.engine.pod_deleted(pod)
        self.reporter.pod_gone(pod)
        self.evictor.pod_deleted(pod)

    def _namespace_changed(self, ns: Any) -> None:
        self.namespace_labels[ns.name] = dict(ns.labels)
        self.engine.set_namespace_labels(self.namespace_labels)

    def _namespace_deleted(self, ns: Any) -> None:
        self.namespace_labels.pop(ns.name, None)
        self.engine.set_namespace_labels(self.namespace_labels)

    def synced(self) -> bool:
        return all(i.has_synced.is_set() for i in (self.pods, self.nodes, self.namespaces)) and all(
            i.has_synced.is_set() for i in self.owner_informers
        )

    def on_profile_event(self, event_type: str | None, body: dict[str, Any]) -> None:
        meta = body.get("metadata", {})
        name = meta.get("name", "")
        if event_type == "DELETED" or not self.profile_selector(meta.get("labels") or {}):
            self.profiles.delete(name)
            self.status.forget(PROFILES, name)
            return
        self.status.observe(PROFILES, name, body.get("status"))
        self.profiles.apply(
            name,
            meta.get("uid", ""),
            int(meta.get("generation") or 0),
            str(meta.get("creationTimestamp", "")),
            dict(body.get("spec") or {}),
            body.get("status"),
        )
        self._refresh_status()

    def _profile_event(self, record: ProfileRecord, type_: str, reason: str, note: str) -> None:
        if self.leader.is_leader():  # standbys see the same change; one report is enough
            ref = ObjectRef(SCHEDULING_PROFILE_KIND, record.name, uid=record.uid, api_version=API_VERSION)
            self.events.event(ref, type_, reason, "Preempt", note)

    def _refresh_status(self) -> None:
        synced = self.synced()
        counts = self.engine.queue.pending_counts()
        for queue, count in counts.items():
            pending_pods.labels(queue).set(count)
        for name, record in self.profiles.records.items():
            scheduler = record.accepted.scheduler_name if record.accepted else None
            stats = self.reporter.stats.get(scheduler) if scheduler else None
            status = self.profiles.status(name, stats, synced)
            if status is not None:
                self.status.set(PROFILES, name, status)

    async def _status_loop(self) -> None:
        while True:
            self._refresh_status()
            await self.status.flush()
            await asyncio.sleep(self.status.interval)

    async def run(self, stop: asyncio.Event) -> None:
        tasks: list[asyncio.Task[Any]] = []
        server = None
        if self.args.metrics_port:
            server = await start_server(self.args.metrics_host, self.args.metrics_port, self.synced)
        self.events.start()
        self.reporter.start()
        for informer in (self.namespaces, self.nodes, self.pods, self.pdbs):
            tasks.append(informer.start())
        tasks.extend(informer.start() for informer in self.owner_informers)
        tasks.append(asyncio.create_task(self.leader.run(), name="leader-election"))
        kopf_stop: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        mirrors = MirrorController(
            self.api,
            self.status,
            pod_priority_counter(lambda: self.pods.store.values()),
            self.leader.is_leader,
        )
        wiring = kopf_app.Wiring(self.api, self.on_profile_event, self.policies.on_event, mirrors)
        kopf_task = asyncio.create_task(
            kopf.operator(
                registry=kopf_app.registry,
                memo=kopf_app.memo(wiring),
                standalone=True,
                clusterwide=True,
                stop_flag=kopf_stop,
                # An explicit identity keeps kopf from calling getpass.getuser(), which fails for a
                # numeric uid without a passwd entry (our container).
                identity=peering.Identity(self.identity),
            ),
            name="kopf",
        )
        # kopf installs its own SIGINT/SIGTERM handlers (replacing ours) and returns when
        # signalled; when it ends for any reason, the whole operator stops.
        kopf_task.add_done_callback(lambda _: stop.set())
        tasks.append(kopf_task)
        await asyncio.wait(
            [asyncio.ensure_future(self._wait_synced()), asyncio.ensure_future(stop.wait())],
            return_when=asyncio.FIRST_COMPLETED,
        )
        tasks.append(asyncio.create_task(self.engine.run(self.leader.is_leader), name="scheduler"))
        tasks.append(asyncio.create_task(self._status_loop(), name="status"))
        log.info("policy-scheduler running", extra={"leader_election": self.args.leader_elect})
        try:
            await stop.wait()
        finally:
            if not kopf_stop.done():
                kopf_stop.set_result(True)
            self.engine.close()
            for task in tasks:
                if task.get_name() != "kopf":
                    task.cancel()
            results = await asyncio.gather(*tasks, return_exceptions=True)
            for task, result in zip(tasks, results, strict=True):
                if isinstance(result, BaseException) and not isinstance(result, asyncio.CancelledError):
                    log.error("component failed", extra={"component": task.get_name(), "error": repr(result)})
                    self.failed = True
            await self.evictor.stop()
            await self.reporter.stop()
            await self.events.stop()
            if server is not None:
                await server.cleanup()

    async def _wait_synced(self) -> None:
        await asyncio.gather(
            *(i.has_synced.wait() for i in (self.pods, self.nodes, self.namespaces, self.pdbs)),
            *(i.has_synced.wait() for i in self.owner_informers),
        )
        # The initial lists created most long-lived objects at once: move them out of the
        # collector's generations so later collections don't rescan them (big clusters).
        gc.collect()
        gc.freeze()


async def _main(args: argparse.Namespace) -> int:
    api = await make_api_client(args.kubeconfig)
    try:
        if args.install_crds:
            await install_crds(api)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError):
                loop.add_signal_handler(sig, stop.set)
        operator = Operator(api, args)
        await operator.run(stop)
    finally:
        await api.close()
    return 1 if operator.failed else 0


def run_operator(args: argparse.Namespace) -> int:
    return asyncio.run(_main(args))
