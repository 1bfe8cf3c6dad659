"""Engine-level storage behaviour: pods whose claims cannot be honoured are never bound, two pods
never get the same PV, and a failed or timed-out PreBind gives the PV back."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from policy_scheduler.scheduler.engine import Engine
from policy_scheduler.scheduler.model import Node, Pod
from policy_scheduler.scheduler.storage.lister import StorageObjects
from policy_scheduler.scheduler.storage.types import (
    ANN_BIND_COMPLETED,
    CSINode,
    CSINodeDriver,
    PersistentVolume,
    PersistentVolumeClaim,
    VolumeAttachment,
)
from policy_scheduler.scheduler.storage.volumes import PodResourceClaim
from tests.builders import make_pod
from tests.fakeclock import FakeClock
from tests.scheduler.plugins._build_storage import GI, HOSTNAME, IMMEDIATE_SC, WAIT_SC, make_pv, make_pvc
from tests.scheduler.test_engine import Hooks, WatchingBinder, profile

BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"


class FakeVolumeAPI:
    """The API server plus a PV controller: writes land in the lister with a new
    resourceVersion; each wait lets the controller complete the bindings it sees."""

    def __init__(self, storage: StorageObjects, *, controller: bool = True) -> None:
        self.storage = storage
        self.controller = controller
        self.gate: asyncio.Event | None = None  # when set, update_pv blocks until released
        self.fail_pv_update = False
        self.version = 100
        self.updated_pvs: list[str] = []

    def _next(self) -> str:
        self.version += 1
        return str(self.version)

    async def update_pv(self, pv: PersistentVolume) -> PersistentVolume:
        if self.gate is not None:
            await self.gate.wait()
        if self.fail_pv_update:
            raise RuntimeError("conflict writing the PersistentVolume")
        stored = dataclasses.replace(pv, resource_version=self._next())
        self.storage.upsert(stored)
        self.updated_pvs.append(pv.name)
        return stored

    async def update_pvc(self, pvc: PersistentVolumeClaim) -> PersistentVolumeClaim:
        stored = dataclasses.replace(pvc, resource_version=self._next())
        self.storage.upsert(stored)
        return stored

    async def wait_for_change(self, max_seconds: float) -> None:
        await asyncio.sleep(0)
        if not self.controller:
            return
        for pv in self.storage.list_pvs():
            ref = pv.claim_ref
            pvc = self.storage.get_pvc(ref.namespace, ref.name) if ref is not None else None
            if pvc is not None and not pvc.fully_bound:
                annotations = {**pvc.annotations, ANN_BIND_COMPLETED: "yes"}
                self.storage.upsert(
                    dataclasses.replace(
                        pvc, volume_name=pv.name, annotations=annotations, resource_version=self._next()
                    )
                )


def setup(
    *objects: Any, controller: bool = True, args: dict[str, Any] | None = None
) -> tuple[Engine, Hooks, WatchingBinder, FakeVolumeAPI, StorageObjects]:
    storage = StorageObjects([IMMEDIATE_SC, WAIT_SC, *objects])
    api = FakeVolumeAPI(storage, controller=controller)
    hooks, binder = Hooks(), WatchingBinder()
    engine = Engine(
        hooks=hooks, binder=binder, seed=7, clock=FakeClock(now=5000.0), storage=storage, volume_api=api
    )
    binder.engine = engine
    config = {"VolumeBinding": args} if args is not None else {}
    engine.set_profiles([profile(plugin_config=config)])
    for name in ("n0", "n1"):
        engine.node_added(
            Node(name, labels={HOSTNAME: name}, allocatable={"cpu": 4000, "memory": 1 << 33, "pods": 110})
        )
    return engine, hooks, binder, api, storage


def with_claims(name: str, *claims: str) -> Pod:
    from policy_scheduler.scheduler.storage.volumes import PVC, Volume

    return dataclasses.replace(
        make_pod(name, cpu=100), volumes=tuple(Volume(c, PVC, claim_name=c) for c in claims)
    )


def local_pv(name: str, node: str) -> PersistentVolume:
    return make_pv(
        name, WAIT_SC.name, phase="Available", capacity=10 * GI, node_affinity={HOSTNAME: [node]}, version="1"
    )


def schedule_two_cycles_then_bind(engine: Engine) -> None:
    async def go() -> None:
        while engine.schedule_next():
            pass  # every cycle runs before any binding task gets to await
        await engine.scheduler.drain_binding()

    asyncio.run(go())


def test_pods_with_unusable_claims_are_never_bound() -> None:
    engine, hooks, binder, *_ = setup(make_pvc("immediate", IMMEDIATE_SC.name))
    engine.pod_added(with_claims("missing", "nope"))
    engine.pod_added(with_claims("unbound-immediate", "immediate"))
    engine.pod_added(
        dataclasses.replace(make_pod("dra", cpu=100), resource_claims=(PodResourceClaim("gpu", "gpu-claim"),))
    )
    schedule_two_cycles_then_bind(engine)
    assert binder.bound == []
    messages = {name: message for name, _, message in hooks.failures}
    assert 'persistentvolumeclaim "nope" not found' in messages["missing"]
    assert "pod has unbound immediate PersistentVolumeClaims" in messages["unbound-immediate"]
    # DynamicResources' PreEnqueue keeps the pod back until its ResourceClaim exists.
    assert "dra" not in messages
    assert engine.queue.pending_counts()["gated"] >= 1


def test_two_pods_cannot_take_the_same_local_pv() -> None:
    engine, hooks, binder, api, storage = setup(
        local_pv("pv-n0", "n0"), make_pvc("a", WAIT_SC.name, request=GI, version="1"),
        make_pvc("b", WAIT_SC.name, request=GI, version="1"), args={"bindTimeoutSeconds": 1},
    )  # fmt: skip
    engine.pod_added(with_claims("pa", "a"))
    engine.pod_added(with_claims("pb", "b"))
    api.gate = asyncio.Event()  # PreBind of the first pod is still writing when the second is scheduled

    async def go() -> None:
        assert api.gate is not None
        while engine.schedule_next():
            pass
        api.gate.set()
        await engine.scheduler.drain_binding()

    asyncio.run(go())
    assert binder.bound == [("pa", "n0")]
    assert [f[0] for f in hooks.failures] == ["pb"]
    assert BIND_CONFLICT in hooks.failures[0][2]
    pv = storage.get_pv("pv-n0")
    assert pv is not None
    assert pv.claim_ref is not None
    assert pv.claim_ref.name == "a"
    claim = storage.get_pvc("default", "a")
    assert claim is not None
    assert claim.fully_bound
    assert claim.volume_name == "pv-n0"


def test_failed_pv_write_gives_the_pv_back() -> None:
    engine, hooks, binder, api, _ = setup(local_pv("pv-n0", "n0"), make_pvc("a", WAIT_SC.name, version="1"))
    api.fail_pv_update = True
    engine.pod_added(with_claims("pa", "a"))
    schedule_two_cycles_then_bind(engine)
    assert binder.bound == []
    assert "conflict writing the PersistentVolume" in hooks.failures[0][2]
    cache = engine.frameworks["default-scheduler"].plugins["VolumeBinding"].cache  # type: ignore[attr-defined]
    pv = cache.get_pv("pv-n0")
    assert pv is not None
    assert pv.claim_ref is None, "the assumed binding was reverted"


def test_bind_timeout_reverts_and_reports() -> None:
    engine, hooks, binder, api, _ = setup(
        local_pv("pv-n0", "n0"), make_pvc("a", WAIT_SC.name, version="1"),
        controller=False, args={"bindTimeoutSeconds": 0},
    )  # fmt: skip
    engine.pod_added(with_claims("pa", "a"))
    schedule_two_cycles_then_bind(engine)
    assert binder.bound == []
    assert api.updated_pvs == ["pv-n0"]
    assert "binding volumes: context deadline exceeded" in hooks.failures[0][2]


def test_bound_claims_only_fit_the_pv_node() -> None:
    engine, _, binder, *_ = setup(
        make_pv("pv", WAIT_SC.name, node_affinity={HOSTNAME: ["n1"]}, version="1"),
        make_pvc("a", WAIT_SC.name, bound_pv="pv", version="1"),
    )  # fmt: skip
    engine.pod_added(with_claims("pa", "a"))
    schedule_two_cycles_then_bind(engine)
    assert binder.bound == [("pa", "n1")]


def test_a_pod_waiting_for_its_claim_is_retried_when_the_claim_appears() -> None:
    engine, hooks, binder, _, storage = setup(local_pv("pv-n1", "n1"))
    engine.pod_added(with_claims("pa", "a"))
    schedule_two_cycles_then_bind(engine)
    assert binder.bound == []
    assert 'persistentvolumeclaim "a" not found' in hooks.failures[0][2]
    assert not engine.schedule_next()  # parked as unschedulable
    waiting = with_claims("pa", "a")
    assert engine.queue.where(waiting) == "unschedulable"
    engine.storage_changed(None, make_pvc("other", WAIT_SC.name, version="1"))
    assert engine.queue.where(waiting) == "unschedulable", "another claim: the hint skips it"
    claim = make_pvc("a", WAIT_SC.name, version="1")
    engine.storage_changed(None, claim)
    assert storage.get_pvc("default", "a") == claim
    assert engine.queue.where(waiting) in ("backoff", "active")
    engine.queue.clock.now += 60  # type: ignore[attr-defined]  # past the backoff
    engine.queue.flush_backoff_completed()
    schedule_two_cycles_then_bind(engine)
    assert binder.bound == [("pa", "n1")]


def test_a_pod_over_the_attach_limit_is_retried_when_a_volume_attachment_goes() -> None:
    driver = "ebs.csi.aws.com"
    csi_pv = dataclasses.replace(
        make_pv("pv", WAIT_SC.name, version="1"), csi_driver=driver, csi_volume_handle="h"
    )
    attached = [
        dataclasses.replace(
            make_pv(f"old-{n}", WAIT_SC.name), csi_driver=driver, csi_volume_handle=f"old-{n}"
        )
        for n in ("n0", "n1")
    ]
    attachments = [VolumeAttachment(f"va-{n}", driver, n, f"old-{n}") for n in ("n0", "n1")]
    engine, hooks, binder, *_ = setup(
        csi_pv,
        make_pvc("a", WAIT_SC.name, bound_pv="pv", version="1"),
        *attached,
        *attachments,
        *(CSINode(n, (CSINodeDriver(driver, n, 1),)) for n in ("n0", "n1")),
    )
    engine.pod_added(with_claims("pa", "a"))
    schedule_two_cycles_then_bind(engine)
    assert binder.bound == []
    assert "exceed max volume count" in hooks.failures[0][2]
    waiting = with_claims("pa", "a")
    assert engine.queue.where(waiting) == "unschedulable"
    engine.storage_changed(attachments[1], None)
    assert engine.queue.where(waiting) in ("backoff", "active")
    engine.queue.clock.now += 60  # type: ignore[attr-defined]  # past the backoff
    engine.queue.flush_backoff_completed()
    schedule_two_cycles_then_bind(engine)
    assert binder.bound == [("pa", "n1")]
