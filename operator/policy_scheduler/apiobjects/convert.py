"""Turn decoded API structs (or plain dicts from YAML) into the scheduler's compact model.

Applies the defaults the API server would have applied, so a hand-written manifest in
`simulate` means the same as the object the server stores. Quantities become canonical
integers (cpu in millicores). A bad quantity is reported as a `ConversionError` naming the
object and field; the informer path uses `pod_from_api_or_malformed` instead so a bad pod is
kept (and reported Unschedulable) rather than silently dropped.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict

from policy_scheduler.apiobjects import structs
from policy_scheduler.apiobjects.cluster_objects import (
    PodConditionInfo,
)
from policy_scheduler.apiobjects.convert_common import (
    PREEMPT_LOWER_PRIORITY,
    Errors,
    epoch,
    labels,
    node_term,
    quantities,
    struct_from_dict,
)
from policy_scheduler.apiobjects.decode import DecodeFailure
from policy_scheduler.apiobjects.errors import ConversionError
from policy_scheduler.scheduler import model
from policy_scheduler.scheduler.resource_names import CPU, MEMORY
from policy_scheduler.scheduler.selectors import to_label_selector as label_selector
from policy_scheduler.scheduler.storage import volumes
from policy_scheduler.scheduler.storage.volumes import PodResourceClaim, Volume

__all__ = [
    "ConversionError",
    "pod_from_api",
    "pod_from_api_or_malformed",
    "pod_from_decode_failure",
    "pod_from_dict",
    "pod_scheduled_condition",
]

DEFAULT_SCHEDULER = "default-scheduler"
_POD_LEVEL_RESOURCES = (CPU, MEMORY)


# --- scalars -----------------------------------------------------------------------------------


# --- selectors and affinity ---------------------------------------------------------------------


def _node_affinity(na: structs.NodeAffinity | None) -> model.NodeAffinity | None:
    if na is None:
        return None
    req = na.required_during_scheduling_ignored_during_execution
    required = None if req is None else tuple(node_term(t) for t in req.node_selector_terms or ())
    preferred = tuple(
        model.PreferredSchedulingTerm(p.weight, node_term(p.preference))
        for p in na.preferred_during_scheduling_ignored_during_execution or ()
    )
    return model.NodeAffinity(required=required, preferred=preferred)


def _pod_affinity_term(t: structs.PodAffinityTerm) -> model.PodAffinityTerm:
    return model.PodAffinityTerm(
        topology_key=t.topology_key,
        label_selector=label_selector(t.label_selector),
        namespaces=tuple(t.namespaces or ()),
        namespace_selector=label_selector(t.namespace_selector),
        match_label_keys=tuple(t.match_label_keys or ()),
        mismatch_label_keys=tuple(t.mismatch_label_keys or ()),
    )


def _pod_affinity(pa: structs.PodAffinity | None) -> model.PodAffinity | None:
    if pa is None:
        return None
    return model.PodAffinity(
        required=tuple(
            _pod_affinity_term(t) for t in pa.required_during_scheduling_ignored_during_execution or ()
        ),
        preferred=tuple(
            model.WeightedPodAffinityTerm(w.weight, _pod_affinity_term(w.pod_affinity_term))
            for w in pa.preferred_during_scheduling_ignored_during_execution or ()
        ),
    )


def _affinity(a: structs.Affinity | None) -> model.Affinity | None:
    if a is None:
        return None
    return model.Affinity(
        node_affinity=_node_affinity(a.node_affinity),
        pod_affinity=_pod_affinity(a.pod_affinity),
        pod_anti_affinity=_pod_affinity(a.pod_anti_affinity),
    )


def _spread(c: structs.TopologySpreadConstraint) -> model.TopologySpreadConstraint:
    return model.TopologySpreadConstraint(
        max_skew=c.max_skew,
        topology_key=c.topology_key,
        when_unsatisfiable=c.when_unsatisfiable,
        label_selector=label_selector(c.label_selector),
        min_domains=c.min_domains,
        node_affinity_policy=c.node_affinity_policy,
        node_taints_policy=c.node_taints_policy,
        match_label_keys=tuple(c.match_label_keys or ()),
    )


def _toleration(t: structs.Toleration) -> model.Toleration:
    return model.Toleration(
        key=t.key,
        operator=t.operator or "Equal",
        value=t.value,
        effect=t.effect,
        toleration_seconds=t.toleration_seconds,
    )


# --- containers and resources -------------------------------------------------------------------


def _container_requests(res: structs.ResourceRequirements | None, path: str, errs: Errors) -> dict[str, int]:
    if res is None:
        return {}
    requests = quantities(res.requests, f"{path}.resources.requests", errs)
    if res.limits:
        # SetDefaults_Pod: a resource with a limit but no request is requested at its limit.
        missing = {k: v for k, v in res.limits.items() if k not in (res.requests or {})}
        requests.update(quantities(missing, f"{path}.resources.limits", errs))
    return requests


def _container(c: structs.Container, path: str, errs: Errors) -> model.Container:
    return model.Container(
        name=c.name,
        image=c.image,
        requests=_container_requests(c.resources, path, errs),
        ports=tuple(
            model.ContainerPort(
                container_port=p.container_port,
                host_port=p.host_port,
                protocol=p.protocol or "TCP",
                host_ip=p.host_ip,
            )
            for p in c.ports or ()
        ),
        restart_policy=c.restart_policy,
        restart_rule_actions=tuple(r.action for r in c.restart_policy_rules or ()),
        bind_mount_options=any(m.bind_mount_options for m in c.volume_mounts or ()),
    )


def _supported_pod_level(name: str) -> bool:
    return name in _POD_LEVEL_RESOURCES or name.startswith("hugepages-")


def _pod_level_requests(res: structs.ResourceRequirements | None, errs: Errors) -> dict[str, int] | None:
    """spec.resources.requests, with defaultPodRequests' fill-in from pod-level limits."""
    if res is None:
        return None
    requests = quantities(res.requests, "spec.resources.requests", errs)
    if res.limits:
        missing = {
            k: v for k, v in res.limits.items() if k not in (res.requests or {}) and _supported_pod_level(k)
        }
        requests.update(quantities(missing, "spec.resources.limits", errs))
    return requests or None


# --- pods -------------------------------------------------------------------------------------


def _volume(v: structs.Volume) -> Volume:
    """The volume sources the storage plugins look at; every other one is OTHER."""
    if v.persistent_volume_claim is not None:
        src = v.persistent_volume_claim
        return Volume(v.name, volumes.PVC, claim_name=src.claim_name, read_only=src.read_only)
    if v.ephemeral is not None:
        return Volume(v.name, volumes.EPHEMERAL)
    if v.csi is not None:
        return Volume(v.name, volumes.CSI, source_id=v.csi.driver, read_only=v.csi.read_only)
    if v.gce_persistent_disk is not None:
        gce = v.gce_persistent_disk
        return Volume(v.name, volumes.GCE_PD, source_id=gce.pd_name, read_only=gce.read_only)
    if v.aws_elastic_block_store is not None:
        ebs = v.aws_elastic_block_store
        return Volume(v.name, volumes.AWS_EBS, source_id=ebs.volume_id, read_only=ebs.read_only)
    if v.iscsi is not None:
        return Volume(v.name, volumes.ISCSI, source_id=v.iscsi.iqn, read_only=v.iscsi.read_only)
    in_tree = {
        volumes.AZURE_DISK: v.azure_disk,
        volumes.CINDER: v.cinder,
        volumes.VSPHERE: v.vsphere_volume,
        volumes.PORTWORX: v.portworx_volume,
    }
    for kind, source in in_tree.items():
        if source is not None:
            return Volume(v.name, kind, source_id=source.id, read_only=source.read_only)
    if v.image is not None:
        return Volume(v.name, volumes.IMAGE, source_id=v.image.reference)
    if v.rbd is not None:
        rbd = v.rbd
        return Volume(
            v.name,
            volumes.RBD,
            source_id=f"{rbd.pool}/{rbd.image}",
            read_only=rbd.read_only,
            rbd_monitors=tuple(rbd.monitors or ()),
        )
    return Volume(v.name, local=_is_local(v))


def _is_local(v: structs.Volume) -> bool:
    """volumeutils.IsLocalEphemeralVolume or hostPath (the kubelet's localVolumeNames)."""
    if v.empty_dir is not None:
        return v.empty_dir.medium == ""
    return v.host_path is not None or v.config_map is not None or v.git_repo is not None


def _resource_claim(c: structs.PodResourceClaim) -> PodResourceClaim:
    return PodResourceClaim(c.name, c.resource_claim_name or "", c.resource_claim_template_name or "")


def _pod_name(meta: structs.ObjectMeta) -> str:
    return f"Pod {meta.namespace or 'default'}/{meta.name}"


class _PodMeta(TypedDict):
    name: str
    namespace: str
    uid: str
    labels: dict[str, str]
    annotations: dict[str, str]
    creation_timestamp: float
    deletion_timestamp: float | None
    resource_version: str


def _pod_meta(meta: structs.ObjectMeta) -> _PodMeta:
    """The pod fields read from its metadata, the same for a decoded pod and a placeholder."""
    creation = epoch(meta.creation_timestamp)
    return _PodMeta(
        name=meta.name,
        namespace=meta.namespace or "default",
        uid=meta.uid,
        labels=labels(meta.labels),
        annotations=labels(meta.annotations),
        creation_timestamp=creation if creation is not None else 0.0,
        deletion_timestamp=epoch(meta.deletion_timestamp),
        resource_version=meta.resource_version,
    )


def _pod(p: structs.Pod, errs: Errors) -> model.Pod:
    meta, spec, status = p.metadata, p.spec, p.status
    return model.Pod(
        **_pod_meta(meta),
        scheduler_name=spec.scheduler_name or DEFAULT_SCHEDULER,
        priority=spec.priority if spec.priority is not None else 0,
        priority_class_name=spec.priority_class_name,
        preemption_policy=spec.preemption_policy or PREEMPT_LOWER_PRIORITY,
        node_name=spec.node_name,
        nominated_node_name=status.nominated_node_name,
        containers=tuple(
            _container(c, f"spec.containers[{i}]", errs) for i, c in enumerate(spec.containers or ())
        ),
        init_containers=tuple(
            _container(c, f"spec.initContainers[{i}]", errs) for i, c in enumerate(spec.init_containers or ())
        ),
        pod_requests=_pod_level_requests(spec.resources, errs),
        overhead=quantities(spec.overhead, "spec.overhead", errs),
        node_selector=labels(spec.node_selector),
        host_network=spec.host_network,
        host_users=spec.host_users,
        affinity=_affinity(spec.affinity),
        tolerations=tuple(_toleration(t) for t in spec.tolerations or ()),
        topology_spread_constraints=tuple(_spread(c) for c in spec.topology_spread_constraints or ()),
        scheduling_gates=tuple(g.name for g in spec.scheduling_gates or ()),
        scheduling_group=(spec.scheduling_group.pod_group_name or "") if spec.scheduling_group else "",
        workload_ref=_workload_ref(spec.workload_ref),
        volumes=tuple(_volume(v) for v in spec.volumes or ()),
        resource_claims=tuple(_resource_claim(c) for c in spec.resource_claims or ()),
        owner_references=tuple(
            model.OwnerReference(kind=o.kind, name=o.name, uid=o.uid, controller=bool(o.controller))
            for o in meta.owner_references or ()
        ),
        start_time=epoch(status.start_time),
        phase=status.phase or "Pending",
        qos_class=status.qos_class,
        resource_claim_statuses=tuple(
            (c.name, c.resource_claim_name) for c in status.resource_claim_statuses or ()
        ),
        scheduled_condition=None if spec.node_name else _scheduled_verdict(status),
        termination_grace_period_seconds=spec.termination_grace_period_seconds,
    )


def _workload_ref(ref: structs.WorkloadReference | None) -> tuple[str, str, str] | None:
    return None if ref is None else (ref.name, ref.pod_group, ref.pod_group_replica_key)


def _scheduled(status: structs.PodStatus) -> structs.PodCondition | None:
    for c in status.conditions or ():  # a loop, not next(genexpr): every pending pod's event
        if c.type == "PodScheduled":
            return c
    return None


def _scheduled_verdict(status: structs.PodStatus) -> tuple[str, str, str] | None:
    c = _scheduled(status)
    return None if c is None else (c.status, c.reason, c.message)


def pod_from_api(p: structs.Pod) -> model.Pod:
    """Convert a decoded pod; raises ConversionError naming the pod and the first bad field."""
    errs: Errors = []
    pod = _pod(p, errs)
    if errs:
        raise errs[0].for_object(_pod_name(p.metadata))
    return pod


def pod_from_api_or_malformed(p: structs.Pod) -> model.Pod:
    """Like pod_from_api, but never raises: problems go into `malformed` on an otherwise full pod."""
    errs: Errors = []
    pod = _pod(p, errs)
    if errs:
        obj = _pod_name(p.metadata)
        pod.malformed = "; ".join(str(e.for_object(obj)) for e in errs)
    return pod


def pod_from_decode_failure(f: DecodeFailure) -> model.Pod:
    """A placeholder pod for an object the decoder could not read, carrying the error."""
    meta = f.metadata
    obj = _pod_name(meta)
    return model.Pod(
        **_pod_meta(meta),
        scheduler_name=f.scheduler_name or DEFAULT_SCHEDULER,
        node_name=f.node_name,
        malformed=str(ConversionError.from_msgspec(f.error, obj)),
    )


def pod_scheduled_condition(p: structs.Pod) -> PodConditionInfo | None:
    """The pod's PodScheduled condition, which status patches compare against."""
    c = _scheduled(p.status)
    if c is None:
        return None
    return PodConditionInfo(c.type, c.status, c.reason, c.message, epoch(c.last_transition_time))


def pod_from_dict(d: Mapping[str, Any]) -> model.Pod:
    return pod_from_api(struct_from_dict(d, structs.Pod, "Pod"))
