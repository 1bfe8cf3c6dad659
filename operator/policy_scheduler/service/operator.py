"""`policy-scheduler run`: the operator and its scheduler in one asyncio program.

- our own list+watch of Pods, Nodes and Namespaces feeds the engine (kopf never sees them);
- kopf (standalone) feeds SchedulingProfiles into the ProfileStore, which validates them and
  swaps the live profiles; at start the early lists feed it first (kube/early_policies.py), and
  then kopf is imported and started only once the scheduler has bound its first pod;
- the engine schedules only while this replica holds the Lease, and every write only the leader
  makes is fenced by the lease's validity on this replica's own clock (kube/fence.py); standbys
  keep caches warm;
- status writes for our CRs are batched; /metrics, /livez, /readyz on one aiohttp server.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import signal
import sys
from collections.abc import Coroutine
from typing import Any

from policy_scheduler.apiobjects.default_selector import DefaultSelectorIndex
from policy_scheduler.apiobjects.podgroups import PodGroupObject, pod_group_from_api
from policy_scheduler.controllers.eviction_policy_store import EvictionPolicyStore
from policy_scheduler.controllers.profile_store import ProfileRecord, ProfileStore, compile_profile_spec
from policy_scheduler.controllers.selector import parse_selector
from policy_scheduler.kube import deferred_cas, early_policies
from policy_scheduler.kube.api_binder import ApiBinder
from policy_scheduler.kube.client import make_api_client
from policy_scheduler.kube.cluster_informers import ClusterInformers
from policy_scheduler.kube.crstatus import StatusWriter
from policy_scheduler.kube.dra_informers import DraInformers
from policy_scheduler.kube.dra_writer import ApiClaimWriter
from policy_scheduler.kube.event_objects import ObjectRef
from policy_scheduler.kube.events import EventRecorder
from policy_scheduler.kube.eviction.evictor import Evictor
from policy_scheduler.kube.informer import Informer
from policy_scheduler.kube.leader import AlwaysLeader, LeaderElector, default_identity
from policy_scheduler.kube.leadership_gate import LeadershipGate
from policy_scheduler.kube.lease import LeaseApi
from policy_scheduler.kube.paths import EVICTION_POLICIES, PODGROUPS, SCHEDULING_PROFILES
from policy_scheduler.kube.pod_reporter import PodReporter
from policy_scheduler.kube.podgroup_status import PodGroupStatusWriter
from policy_scheduler.kube.serving.server import Server, ServingError
from policy_scheduler.kube.storage_informers import StorageChanges
from policy_scheduler.kube.volume_api import KubeVolumeAPI
from policy_scheduler.observability import metrics
from policy_scheduler.observability.metrics import extension_point_duration, pending_pods
from policy_scheduler.observability.scheduler_metrics import MetricsObserver, register_engine
from policy_scheduler.policy.constants import API_VERSION, SCHEDULING_PROFILE_KIND
from policy_scheduler.scheduler.diagnosis_recorder import DiagnosisRecorder, Observers, pending_summary
from policy_scheduler.scheduler.dra.model import DeviceSelector
from policy_scheduler.scheduler.dra.services import DraServices
from policy_scheduler.scheduler.dra.store import DraStore
from policy_scheduler.scheduler.engine import Engine
from policy_scheduler.scheduler.framework.services import ClusterServices
from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.versioning.features import FeatureGateError
from policy_scheduler.service import collector as startup_gc
from policy_scheduler.service.config import OperatorConfig
from policy_scheduler.service.kubernetes_version import KubernetesSemantics

log = logging.getLogger(__name__)

PROFILES = "schedulingprofiles"
# After start-up from the early lists, kopf waits for the first bind at most this long.
KOPF_AFTER_FIRST_BIND_LIMIT = 2.0


@functools.cache
def _extension_point_series(point: str, status: str, profile: str) -> Any:
    # A few label sets, observed several times per cycle: look each up once.
    return extension_point_duration.labels(point, status, profile)


def _observe_extension_point(profile: str, point: str, status: str, seconds: float) -> None:
    _extension_point_series(point, status, profile).observe(seconds)


def _compile_selector(expression: str) -> DeviceSelector:
    # Imported on the first CEL device selector: celpy is ~0.1 CPU-s of start-up (issue 12).
    from policy_scheduler.cel.device_selector import compile_selector

    return compile_selector(expression)


class EnginePods:
    """The evictor's PendingPods: the engine's unassigned pods and its queue."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def pending(self, key: str) -> Pod | None:
        return self.engine.unassigned.get(key)

    def requeue(self, pod: Pod) -> None:
        self.engine.queue.activate([pod])


class Operator:
    """The composition root: every component, built once in dependency order."""

    def __init__(self, api: Any, config: OperatorConfig) -> None:
        self.api = api
        self.config = config
        self.identity = config.identity or default_identity()
        self.failed = False
        self.leader: LeaderElector | AlwaysLeader = (
            LeaderElector(
                LeaseApi(api, config.lease_namespace, config.lease_name),
                identity=self.identity,
                timings=config.timings.leader,
            )
            if config.leader_elect
            else AlwaysLeader()
        )
        metrics.is_leader.set_function(self.leader.acting_now)
        # Every write only the leader makes asks the elector first (kube/fence.py).
        fence = self.leader
        self.events = EventRecorder(api, instance=self.identity, timings=config.timings.events)
        self.status = StatusWriter(api, interval=config.timings.status_interval, fence=fence)
        self.policies = EvictionPolicyStore(status=self.status)
        # PodTopologySpread's default constraints select pods by their Services and controllers.
        self.owners = DefaultSelectorIndex()
        self.pdbs = ClusterInformers.pdb_informer(api, config.timings.informer)
        # The engine's preemption gate is the evictor's, and the evictor requeues into the
        # engine: the evictor gets the engine's pods once the engine exists (attach below).
        self.evictor = Evictor(
            api, self.events, fence=fence, policies=self.policies, timings=config.timings.eviction
        )
        self.reporter = PodReporter(
            api,
            self.events,
            fence=fence,
            on_preempt=self.evictor.on_preempt,
            writers=config.timings.pod_status_writers,
            summary_for=self._pending_summary,
        )
        self.dra_store = DraStore()
        services = ClusterServices(
            list_pdbs=lambda: list(self.pdbs.store.values()),
            eviction_policy=self.policies.policy_for_scheduler,
            preemption_in_progress=self.evictor.in_progress,
            owner_selectors=self.owners.owner_selectors,
            dra=DraServices(self.dra_store, _compile_selector, ApiClaimWriter(api, fence)),
        )
        self.storage_changes = StorageChanges()
        # Explanations of the last attempts (served on /debug/explain) and kube-scheduler's metrics.
        self.explanations = DiagnosisRecorder()
        cycle_metrics = MetricsObserver()
        self.engine = Engine(
            hooks=self.reporter,
            binder=ApiBinder(api, timings=config.timings.api, fence=fence),
            observe=_observe_extension_point,
            services=services,
            volume_api=KubeVolumeAPI(api, self.storage_changes, timings=config.timings.api, fence=fence),
            observer=Observers(self.explanations, cycle_metrics),
            plugin_metrics=cycle_metrics,
        )
        self.evictor.attach(EnginePods(self.engine))
        # Gang scheduling: scheduler-plugins' PodGroups through our own watch (a foreign CRD that
        # may be absent: its pods then wait with "PodGroup not found").
        self.podgroups = Informer(
            api,
            PODGROUPS,
            PodGroupObject,
            pod_group_from_api,
            on_add=self.engine.pod_group_set,
            on_update=lambda _old, new: self.engine.pod_group_set(new),
            on_delete=lambda group: self.engine.pod_group_deleted(group.key),
            timings=config.timings.informer,
        )
        self.podgroup_status = PodGroupStatusWriter(
            api, self.engine.pod_groups, self.engine.table, fence=fence
        )
        self.profiles = ProfileStore(
            compile_profile_spec,
            self.engine.set_profiles,
            eviction_policy_problem=self.policies.problem,
            notify=self._profile_event,
            on_preemption_restored=self.engine.retry_pending,
        )
        self.policies.profiles = self.profiles
        # Which Kubernetes release the profiles decide like: the API server's, re-read while running.
        self.kubernetes = KubernetesSemantics(
            api, self.profiles, emulated=config.emulated_version, feature_gates=config.feature_gates
        )
        self.profile_selector = parse_selector(config.profile_selector)
        # Names from the early lists (by path) until kopf has listed: see on_kopf_listed.
        self.early_names: dict[str, set[str]] | None = None
        self.cluster = ClusterInformers(
            api,
            self.engine,
            on_pod_deleted=self._pod_deleted,
            owners=self.owners,
            pdbs=self.pdbs,
            timings=config.timings.informer,
            storage_changes=self.storage_changes,
            dra=DraInformers(api, self.dra_store, self.engine, config.timings.informer),
        )

    def _pending_summary(self, pod: Pod) -> str | None:
        found = self.explanations.get(pod.namespace, pod.name)
        return pending_summary(found) if found is not None else None

    def _pod_deleted(self, pod: Pod) -> None:
        self.engine.pod_deleted(pod)
        self.explanations.forget(pod.namespace, pod.name)
        self.reporter.pod_gone(pod)
        self.evictor.pod_deleted(pod)

    def synced(self) -> bool:
        return self.cluster.synced()

    def informers(self) -> list[Informer[Any, Any]]:
        """Every informer the operator runs; `run` asks for their first lists early
        (paths.EARLY_LISTS)."""
        return [*self.cluster.informers(), self.podgroups]

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

    async def _apply_early_policies(self) -> bool:
        """EvictionPolicies, then SchedulingProfiles, from the early lists, through the handlers
        kopf calls; False if there were none (then kopf's lists come first)."""
        lists = await early_policies.take(self.config.timings.informer.page_size)
        if lists is None:
            return False
        for body in lists[EVICTION_POLICIES]:
            self.policies.on_event(None, body)
        for body in lists[SCHEDULING_PROFILES]:
            self.on_profile_event(None, body)
        self.early_names = {path: early_policies.names(items) for path, items in lists.items()}
        log.info(
            "policies from the early lists",
            extra={"profiles": sorted(self.early_names[SCHEDULING_PROFILES])},
        )
        return True

    def on_kopf_listed(self, profiles: set[str], eviction_policies: set[str]) -> None:
        """kopf has listed both kinds: what the early lists had and kopf's lists lack was deleted
        in between (kopf never saw it, so it will not say). Only the first call does anything."""
        early, self.early_names = self.early_names, None
        if early is None:
            return
        for name in sorted(early[EVICTION_POLICIES] - eviction_policies):
            self.policies.on_event("DELETED", {"metadata": {"name": name}})
        for name in sorted(early[SCHEDULING_PROFILES] - profiles):
            log.info("profile deleted before kopf listed it", extra={"profile": name})
            self.on_profile_event("DELETED", {"metadata": {"name": name}})

    async def _until_first_bind(self) -> None:
        """Until the scheduler binds its first pod, unless it has none to bind (or is a standby)."""
        if not self.leader.is_leader() or not self.engine.queue.pending_counts()["active"]:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.reporter.bound_once.wait(), KOPF_AFTER_FIRST_BIND_LIMIT)

    def _start_kopf(self, stop: asyncio.Event, kopf_stop: asyncio.Future[bool]) -> asyncio.Task[Any]:
        # Imported here: kopf and the mirror controller are not needed for the first bind when the
        # early lists brought the policies (about 0.2 CPU-s of imports, issue 12).
        import kopf

        # Also deferred from start-up: the CAs of aiohttp's default contexts, before anything
        # that could rely on them (kopf) starts.
        deferred_cas.load()
        from policy_scheduler.controllers import kopf_app
        from policy_scheduler.controllers.priorityclass_mirror import MirrorController, pod_priority_counter

        mirrors = MirrorController(
            self.api,
            self.status,
            pod_priority_counter(lambda: self.cluster.pods.store.values()),
            self.leader,
            timings=self.config.mirrors,
        )
        wiring = kopf_app.Wiring(
            self.api, self.on_profile_event, self.policies.on_event, mirrors, on_listed=self.on_kopf_listed
        )
        # kopf's Identity is a NewType of str (not re-exported): the string itself is one.
        identity: Any = self.identity
        kopf_task = asyncio.create_task(
            kopf.operator(
                registry=kopf_app.registry,
                memo=kopf_app.memo(wiring),
                standalone=True,
                clusterwide=True,
                stop_flag=kopf_stop,
                # An explicit identity keeps kopf from calling getpass.getuser(), which fails for a
                # numeric uid without a passwd entry (our container).
                identity=identity,
            ),
            name="kopf",
        )
        # kopf installs its own SIGINT/SIGTERM handlers (replacing ours) and returns when
        # signalled; when it ends for any reason, the whole operator stops.
        kopf_task.add_done_callback(lambda _: stop.set())
        return kopf_task

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
        # The release semantics first: every profile is resolved for it.
        await self.kubernetes.start()
        tasks: list[asyncio.Task[Any]] = [
            asyncio.create_task(self.kubernetes.run(), name="kubernetes-version")
        ]
        unregister = register_engine(self.engine)
        server = Server(self.api, self.config.serving, self.synced, self.explanations)
        await server.start()
        early = asyncio.create_task(self._apply_early_policies(), name="early policies")
        self.events.start()
        self.reporter.start()
        tasks.extend(informer.start() for informer in self.informers())
        tasks.append(asyncio.create_task(self.podgroup_status.run(), name="podgroup-status"))
        tasks.append(asyncio.create_task(self.leader.run(), name="leader-election"))
        kopf_stop: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        from_early_lists = await early
        if not from_early_lists:  # the profiles come from kopf: start it at once
            tasks.append(self._start_kopf(stop, kopf_stop))
        collector_deadline = startup_gc.resume_after()
        await _unless_stopped(self.cluster.wait_synced(), stop)
        startup_gc.resume()
        collector_deadline.cancel()
        # The informers the start waited for (PodGroups' CRD may be absent: not those).
        gate = LeadershipGate(self.leader, self.cluster.catch_up)
        tasks.append(
            asyncio.create_task(self.engine.run(gate.should_schedule, gate.until_ready), name="scheduler")
        )
        tasks.append(asyncio.create_task(self._status_loop(), name="status"))
        log.info("policy-scheduler running", extra={"leader_election": self.config.leader_elect})
        try:
            if from_early_lists:
                await _unless_stopped(self._until_first_bind(), stop)
                if not stop.is_set():
                    tasks.append(self._start_kopf(stop, kopf_stop))
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
            await self.leader.release()  # nothing acts for this replica any more
            await server.stop()
            unregister()


async def _unless_stopped(work: Coroutine[Any, Any, object], stop: asyncio.Event) -> None:
    """Await `work`, or until `stop` is set; whichever is left over is cancelled."""
    waiters = [asyncio.ensure_future(work), asyncio.ensure_future(stop.wait())]
    await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    for waiter in waiters:
        waiter.cancel()


async def _main(config: OperatorConfig) -> int:
    api = await make_api_client(config.kubeconfig)
    try:
        if config.install_crds:
            # Imported only here: rendering CRDs is not needed otherwise (start-up, issue 12).
            from policy_scheduler.kube.crdinstall import install_crds

            await install_crds(api, config.timings.api)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError):
                loop.add_signal_handler(sig, stop.set)
        operator = Operator(api, config)
        await operator.run(stop)
    finally:
        await api.close()
    return 1 if operator.failed else 0


def run_operator(config: OperatorConfig) -> int:
    try:
        return asyncio.run(_main(config))
    except ServingError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except FeatureGateError as exc:
        print(f"error: --feature-gates: {exc}", file=sys.stderr)
        return 2
