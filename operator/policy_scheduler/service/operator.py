"""`policy-scheduler run`: the operator and its scheduler in one asyncio program.

- our own list+watch of Pods, Nodes and Namespaces feeds the engine (kopf never sees them);
- our own list+watch of SchedulingProfiles and EvictionPolicies feeds their stores, which
  validate them and swap the live profiles (kube/policy_informers.py);
- kopf (standalone) runs the PriorityClassMirror controller, once the informers have listed;
- the engine schedules only while this replica holds the Lease, and every write only the leader
  makes is fenced by the lease's validity on this replica's own clock (kube/fence.py); standbys
  keep caches warm;
- status writes for our CRs are batched; /metrics, the health paths and /debug/explain are
  served on the secure port (kube/serving/).

service/startup.py runs it: `start`, `wait_synced`, `start_scheduling`, then `stop`.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

import kopf

from policy_scheduler.apiobjects.default_selector import DefaultSelectorIndex
from policy_scheduler.apiobjects.podgroups import PodGroupObject, pod_group_from_api
from policy_scheduler.controllers import kopf_app
from policy_scheduler.controllers.eviction_policy_store import EvictionPolicyStore
from policy_scheduler.controllers.priorityclass_mirror import WORKQUEUE_NAME as MIRROR_QUEUE
from policy_scheduler.controllers.priorityclass_mirror import MirrorController, pod_priority_counter
from policy_scheduler.controllers.profile_store import ProfileRecord, ProfileStore, compile_profile_spec
from policy_scheduler.controllers.selector import parse_selector
from policy_scheduler.kube.api_binder import ApiBinder
from policy_scheduler.kube.cluster_informers import ClusterInformers
from policy_scheduler.kube.crstatus import StatusWriter
from policy_scheduler.kube.dra_informers import DraInformers
from policy_scheduler.kube.dra_writer import ApiClaimWriter
from policy_scheduler.kube.event_objects import ObjectRef
from policy_scheduler.kube.events import EventRecorder
from policy_scheduler.kube.eviction.evictor import Evictor
from policy_scheduler.kube.first_lists import FirstLists
from policy_scheduler.kube.informer import Informer
from policy_scheduler.kube.leader import AlwaysLeader, LeaderElector, default_identity
from policy_scheduler.kube.leadership_gate import LeadershipGate
from policy_scheduler.kube.lease import LeaseApi
from policy_scheduler.kube.paths import PODGROUPS
from policy_scheduler.kube.pod_reporter import PodReporter
from policy_scheduler.kube.podgroup_status import PodGroupStatusWriter
from policy_scheduler.kube.policy_informers import PolicyInformers
from policy_scheduler.kube.pressure.component import NodePressure
from policy_scheduler.kube.serving.server import Server
from policy_scheduler.kube.storage_informers import StorageChanges
from policy_scheduler.kube.volume_api import KubeVolumeAPI
from policy_scheduler.kube.workload_informers import WorkloadInformers
from policy_scheduler.kube.workload_status import WorkloadGroupStatusWriter
from policy_scheduler.observability import metrics
from policy_scheduler.observability.event_metrics import TimedEvents
from policy_scheduler.observability.metrics import extension_point_duration, pending_pods
from policy_scheduler.observability.scheduler_metrics import MetricsObserver, register_engine
from policy_scheduler.observability.workqueue_metrics import WorkQueueMetrics, register_queues
from policy_scheduler.policy.constants import API_VERSION, SCHEDULING_PROFILE_KIND
from policy_scheduler.scheduler.diagnosis_recorder import DiagnosisRecorder, Observers, pending_summary
from policy_scheduler.scheduler.dra.model import DeviceSelector
from policy_scheduler.scheduler.dra.services import DraServices
from policy_scheduler.scheduler.dra.store import DraStore
from policy_scheduler.scheduler.engine import Engine
from policy_scheduler.scheduler.framework.services import ClusterServices
from policy_scheduler.scheduler.model import Pod
from policy_scheduler.service.api_availability import REASON_NOT_SERVED, ApiAvailability
from policy_scheduler.service.config import OperatorConfig
from policy_scheduler.service.kubernetes_version import KubernetesSemantics

if TYPE_CHECKING:
    from policy_scheduler.kube.client import ApiClient

log = logging.getLogger(__name__)

PROFILES = "schedulingprofiles"


@functools.cache
def _extension_point_series(point: str, status: str, profile: str) -> Any:
    # A few label sets, observed several times per cycle: look each up once.
    return extension_point_duration.labels(point, status, profile)


def _observe_extension_point(profile: str, point: str, status: str, seconds: float) -> None:
    _extension_point_series(point, status, profile).observe(seconds)


def _compile_selector(expression: str) -> DeviceSelector:
    # Imported on the first CEL device selector: importing celpy is CPU every start would pay.
    from policy_scheduler.cel.device_selector import compile_selector

    return compile_selector(expression)


class EnginePods:
    """The evictor's PendingPods: the engine's unassigned pods and its queue."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def pending(self, key: str) -> Pod | None:
        return self.engine.unassigned.get(key)

    def requeue(self, pod: Pod) -> None:
        self.engine.activate_with_group(pod)


class Operator:
    """The composition root: every component, built once in dependency order."""

    def __init__(self, api: ApiClient, config: OperatorConfig, first_lists: FirstLists | None = None) -> None:
        self.api = api
        self.config = config
        self.identity = config.identity or default_identity()
        self.failed = False  # a component ended with an error
        self._tasks: list[asyncio.Task[Any]] = []
        self._kopf_stop: asyncio.Future[bool] | None = None
        self._unregister: Callable[[], None] | None = None
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
        if config.leader_elect:  # as kube-scheduler: only with leader election
            metrics.leader_election_master_status.labels(config.lease_name).set_function(
                self.leader.is_leader
            )
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
            volume_stage_failed=metrics.count_volume_stage_failures,
        )
        self.storage_changes = StorageChanges()
        # Explanations of the last attempts (served on /debug/explain) and kube-scheduler's metrics.
        self.explanations = DiagnosisRecorder()
        cycle_metrics = MetricsObserver()
        self.engine = Engine(
            hooks=self.reporter,
            binder=ApiBinder(api, fence=fence),
            observe=_observe_extension_point,
            services=services,
            volume_api=KubeVolumeAPI(api, self.storage_changes, timings=config.timings.api, fence=fence),
            observer=Observers(self.explanations, cycle_metrics),
            plugin_metrics=cycle_metrics,
        )
        self.engine.queue.hints.observe = cycle_metrics.hint_ran
        self.evictor.attach(EnginePods(self.engine))
        # Node pressure: usage, the kubelet's eviction modelled, relief under EvictionPolicies
        # (kube/pressure/); relief shares the policies' rate limits with preemption.
        self.pressure = NodePressure(
            api,
            self.engine,
            limiters=self.evictor.limiters,
            events=self.events,
            policies=self.policies,
            fence=fence,
            options=config.pressure,
            timings=config.timings,
        )
        self.server = Server(
            api,
            config.serving,
            self.synced,
            self.explanations,
            standing=self.pressure.standing,
            placement=self.pressure.placement,
        )
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
        # The Workload API's pod groups (scheduling.k8s.io), the GangScheduling plugin's.
        self.workload_groups = WorkloadInformers(
            api,
            on_set=self.engine.workload_group_set,
            on_delete=self.engine.workload_group_deleted,
            timings=config.timings.informer,
        )
        self.workload_status = WorkloadGroupStatusWriter(
            api, self.engine.workload_groups, self.workload_groups.served_pod_group_version, fence=fence
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
        self.policy_informers = PolicyInformers(
            api,
            on_profile=self.on_profile_event,
            on_eviction_policy=self.policies.on_event,
            timings=config.timings.informer,
        )
        # The informers' events reach the engine timed (scheduler_event_handling_duration_seconds).
        events = TimedEvents(self.engine)
        self.cluster = ClusterInformers(
            api,
            events,
            on_pod_deleted=events.timed_pod_deleted(self._pod_deleted),
            owners=self.owners,
            pdbs=self.pdbs,
            timings=config.timings.informer,
            storage_changes=self.storage_changes,
            dra=DraInformers(api, self.dra_store, events, config.timings.informer),
        )
        for informer in [*self.informers(), *self.policy_informers.informers()]:
            informer.first_lists = first_lists
        # APIs the cluster may not serve (DRA, storage kinds, the PodGroup CRD).
        self.apis = ApiAvailability(
            api,
            self.informers,
            services.unserved,
            on_served=self._apis_served,
            adopt=self._tasks.extend,
            interval=config.api_discovery_interval,
        )
        # (profile uid, reason, server version) already told in a KubernetesVersion Event.
        self._version_reported: set[tuple[str, str, str | None]] = set()

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
        """The informers of the cluster's objects (the policy informers run in their own order)."""
        return [*self.cluster.informers(), self.podgroups, *self.workload_groups.informers()]

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

    async def _run_kopf(self, stop: asyncio.Event, stop_flag: asyncio.Future[bool]) -> None:
        """kopf with the mirror controller, until it ends; then the whole operator stops."""
        mirrors = MirrorController(
            self.api,
            self.status,
            pod_priority_counter(lambda: self.cluster.pods.store.values()),
            self.leader,
            timings=self.config.mirrors,
            workqueue_observer=WorkQueueMetrics(MIRROR_QUEUE),
        )
        unregister_queues = register_queues(lambda: [mirrors.queue])
        # kopf's Identity is a NewType of str (not re-exported): the string itself is one.
        identity: Any = self.identity
        try:
            # kopf installs its own SIGINT/SIGTERM handlers (replacing ours) and returns when
            # signalled.
            await kopf.operator(
                registry=kopf_app.registry(),
                memo=kopf_app.memo(kopf_app.Wiring(self.api, mirrors)),
                standalone=True,
                clusterwide=True,
                stop_flag=stop_flag,
                # An explicit identity keeps kopf from calling getpass.getuser(), which fails for a
                # numeric uid without a passwd entry (our container).
                identity=identity,
            )
        finally:
            unregister_queues()
            stop.set()

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
                self.apis.report(record, status, self._api_not_served)
                self._report_version(record)
                self.status.set(PROFILES, name, status)

    def _api_not_served(self, record: ProfileRecord, note: str) -> None:
        if self.leader.is_leader():  # standbys see the same; one report is enough
            ref = ObjectRef(SCHEDULING_PROFILE_KIND, record.name, uid=record.uid, api_version=API_VERSION)
            self.events.event(ref, "Warning", REASON_NOT_SERVED, "Schedule", note)

    def _report_version(self, record: ProfileRecord) -> None:
        """A Warning Event, once per profile and server version, when the profile cannot decide
        like the cluster's own kube-scheduler (a release older or newer than we support, or
        --feature-gates the new release refused); its KubernetesVersion condition says the same."""
        semantics = self.profiles.semantics
        if semantics.matches_cluster or record.accepted is None or not self.leader.is_leader():
            return
        key = (record.uid, semantics.reason, semantics.server_version)
        if key not in self._version_reported:
            self._version_reported.add(key)
            ref = ObjectRef(SCHEDULING_PROFILE_KIND, record.name, uid=record.uid, api_version=API_VERSION)
            note = semantics.describe(record.accepted.features)
            self.events.event(ref, "Warning", semantics.reason, "Schedule", note)

    def _apis_served(self) -> None:
        """An API is served again: the pods that waited for it try again."""
        for scheduler_name in list(self.engine.frameworks):
            self.engine.retry_pending(scheduler_name)

    async def _status_loop(self) -> None:
        while True:
            self._refresh_status()
            await self.status.flush()
            await asyncio.sleep(self.status.interval)

    # ---- lifecycle, in the order service/startup.py calls it ---------------------------------------

    async def start(self) -> None:
        """The server, the writers, every informer and leader election. Raises MissingCrdError if
        our CRDs are not installed, ServingError if the server cannot listen."""
        # What the cluster serves and its release, both before any profile is resolved.
        served, _ = await asyncio.gather(self.apis.first_discovery(), self.kubernetes.start())
        served.require_own_crds()
        self.apis.apply(served)
        self._spawn(self.kubernetes.run(), "kubernetes-version")
        self._unregister = register_engine(self.engine)
        await self.server.start()
        self.events.start()
        self.reporter.start()
        self._tasks.extend(informer.start() for informer in self.informers() if informer.served)
        self._spawn(self.apis.run(), "api-discovery")
        self._spawn(self.policy_informers.run(), "policy-informers")
        self._spawn(self.podgroup_status.run(), "podgroup-status")
        self._spawn(self.workload_status.run(), "workload-podgroup-status")
        self._spawn(self.leader.run(), "leader-election")

    async def wait_synced(self) -> None:
        """Until the informers the scheduler needs have listed (PodGroups' CRD may be absent: not
        that one)."""
        await asyncio.gather(self.cluster.wait_synced(), self.policy_informers.wait_synced())

    def start_scheduling(self, stop: asyncio.Event) -> None:
        """The engine, the status loop, and kopf with the mirror controller (the mirrors report
        the pods of each class from the pod informer, so they start once it has listed); `stop`
        is set when kopf ends. A new leader catches up with the cluster before it schedules."""
        gate = LeadershipGate(self.leader, self.cluster.catch_up)
        self._spawn(self.engine.run(gate.should_schedule, gate.until_ready), "scheduler")
        self._spawn(self._status_loop(), "status")
        self._tasks.append(self.pressure.start())
        self._kopf_stop = asyncio.get_running_loop().create_future()
        self._spawn(self._run_kopf(stop, self._kopf_stop), "kopf")
        log.info("policy-scheduler running", extra={"leader_election": self.config.leader_elect})

    async def stop(self) -> None:
        """Stops what `start` and `start_scheduling` started; a component that had failed sets
        `failed`."""
        if self._kopf_stop is not None and not self._kopf_stop.done():
            self._kopf_stop.set_result(True)
        self.engine.close()
        for task in self._tasks:
            if task.get_name() != "kopf":  # it ends on its stop flag
                task.cancel()
        results = await asyncio.gather(*self._tasks, return_exceptions=True)
        for task, result in zip(self._tasks, results, strict=True):
            if isinstance(result, BaseException) and not isinstance(result, asyncio.CancelledError):
                log.error("component failed", extra={"component": task.get_name(), "error": repr(result)})
                self.failed = True
        await self.evictor.stop()
        await self.reporter.stop()
        await self.events.stop()
        await self.leader.release()  # nothing acts for this replica any more
        await self.server.stop()
        if self._unregister is not None:
            self._unregister()

    def _spawn(self, work: Coroutine[Any, Any, None], name: str) -> None:
        self._tasks.append(asyncio.create_task(work, name=name))
