"""PriorityClassMirror controller: the decision for each state of the native class, the status,
and one reconcile against a fake API (no cluster)."""

from __future__ import annotations

from typing import Any

import pytest

from policy_scheduler.controllers import priorityclass_mirror as pcm
from policy_scheduler.controllers.last_accepted import LastAccepted
from policy_scheduler.controllers.mirror_plan import (
    MANAGED_BY,
    MANAGED_BY_LABEL,
    ORIGIN_ADOPTED,
    ORIGIN_ANNOTATION,
    ORIGIN_CREATED,
    Action,
    NativeState,
    plan,
    plan_deletion,
    validate,
)
from policy_scheduler.controllers.mirror_status import MirrorRecord, SyncResult, mirror_status, pod_counts
from policy_scheduler.controllers.priorityclass_mirror import MirrorController
from policy_scheduler.kube import priorityclasses as native_api
from policy_scheduler.kube.client import ApiError
from policy_scheduler.policy.errors import PolicyError
from policy_scheduler.policy.priorityclass import PriorityClassMirrorSpec
from tests.aio import eventually, settle
from tests.fence import SwitchFence

NAME = "high"
UID = "mirror-uid-1"


def spec(**kw: Any) -> PriorityClassMirrorSpec:
    return PriorityClassMirrorSpec.model_validate({"value": 1000, **kw})


def ours(origin: str = ORIGIN_CREATED, owner: str | None = UID, **kw: Any) -> NativeState:
    refs: tuple[dict[str, Any], ...] = ()
    if owner is not None:
        refs = (
            {
                "apiVersion": "scheduling.policy-scheduler.io/v1alpha1",
                "kind": "PriorityClassMirror",
                "name": NAME,
                "uid": owner,
                "controller": True,
            },
        )
    values: dict[str, Any] = {
        "uid": "native-1",
        "value": 1000,
        "labels": {MANAGED_BY_LABEL: MANAGED_BY},
        "annotations": {ORIGIN_ANNOTATION: origin},
        "owner_references": refs,
    }
    values.update(kw)
    return NativeState(**values)


# ---- plan: one case per state ------------------------------------------------------------------


def test_missing_native_class_is_created_owned_by_the_mirror() -> None:
    step = plan(NAME, UID, spec(description="d", globalDefault=False), None)
    assert step.action is Action.CREATE
    body = step.body
    assert body is not None
    assert body["apiVersion"] == "scheduling.k8s.io/v1"
    assert body["kind"] == "PriorityClass"
    assert body["value"] == 1000
    assert body["description"] == "d"
    assert body["preemptionPolicy"] == "PreemptLowerPriority"
    assert body["globalDefault"] is False
    meta = body["metadata"]
    assert meta["name"] == NAME
    assert meta["labels"] == {MANAGED_BY_LABEL: MANAGED_BY}
    assert meta["annotations"] == {ORIGIN_ANNOTATION: ORIGIN_CREATED}
    assert [(r["kind"], r["name"], r["uid"]) for r in meta["ownerReferences"]] == [
        ("PriorityClassMirror", NAME, UID)
    ]


def test_matching_class_needs_nothing() -> None:
    assert plan(NAME, UID, spec(), ours()).action is Action.NOTHING


def test_description_and_global_default_are_patched_in_place() -> None:
    step = plan(NAME, UID, spec(description="new", globalDefault=True), ours(description="old"))
    assert step.action is Action.UPDATE
    assert step.patch == {"globalDefault": True, "description": "new"}


def test_removed_description_is_patched_to_null() -> None:
    step = plan(NAME, UID, spec(), ours(description="old"))
    assert step.action is Action.UPDATE
    assert step.patch == {"description": None}


@pytest.mark.parametrize(
    ("native", "wanted"),
    [
        ({"value": 999}, {}),
        ({}, {"preemptionPolicy": "Never"}),
    ],
)
def test_immutable_change_recreates_and_keeps_origin_labels_annotations(
    native: dict[str, Any], wanted: dict[str, Any]
) -> None:
    current = ours(
        **native,
        labels={MANAGED_BY_LABEL: MANAGED_BY, "team": "a"},
        annotations={ORIGIN_ANNOTATION: ORIGIN_CREATED, "note": "x"},
    )
    step = plan(NAME, UID, spec(**wanted), current)
    assert step.action is Action.RECREATE
    assert step.body is not None
    assert step.body["value"] == 1000
    assert step.body["preemptionPolicy"] == wanted.get("preemptionPolicy", "PreemptLowerPriority")
    assert step.body["metadata"]["labels"] == {MANAGED_BY_LABEL: MANAGED_BY, "team": "a"}
    assert step.body["metadata"]["annotations"] == {ORIGIN_ANNOTATION: ORIGIN_CREATED, "note": "x"}
    assert step.body["metadata"]["ownerReferences"][0]["uid"] == UID


def test_unmanaged_class_is_adopted_without_owner_reference() -> None:
    foreign = NativeState(uid="n", value=1000, description="theirs", labels={"team": "a"})
    step = plan(NAME, UID, spec(description="ours"), foreign)
    assert step.action is Action.ADOPT
    assert step.patch == {
        "description": "ours",
        "metadata": {
            "labels": {MANAGED_BY_LABEL: MANAGED_BY},
            "annotations": {ORIGIN_ANNOTATION: ORIGIN_ADOPTED},
        },
    }


def test_unmanaged_class_with_other_value_is_recreated_as_adopted() -> None:
    foreign = NativeState(uid="n", value=5)
    step = plan(NAME, UID, spec(), foreign)
    assert step.action is Action.RECREATE
    assert step.body is not None
    assert step.body["metadata"]["annotations"][ORIGIN_ANNOTATION] == ORIGIN_ADOPTED
    assert "ownerReferences" not in step.body["metadata"]


def test_adopted_class_in_sync_needs_nothing_and_gets_no_owner() -> None:
    assert plan(NAME, UID, spec(), ours(origin=ORIGIN_ADOPTED, owner=None)).action is Action.NOTHING


def test_created_class_of_an_earlier_mirror_is_re_pointed_at_the_new_one() -> None:
    step = plan(NAME, "mirror-uid-2", spec(), ours(owner=UID))
    assert step.action is Action.UPDATE
    assert step.patch is not None
    refs = step.patch["metadata"]["ownerReferences"]
    assert [r["uid"] for r in refs] == ["mirror-uid-2"]


def test_other_owner_references_survive_the_re_pointing() -> None:
    other = {"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": "cm"}
    current = NativeState(
        uid="n", value=1000, annotations={ORIGIN_ANNOTATION: ORIGIN_CREATED}, owner_references=(other,)
    )
    step = plan(NAME, UID, spec(), current)
    assert step.action is Action.UPDATE
    assert step.patch is not None
    assert [r["kind"] for r in step.patch["metadata"]["ownerReferences"]] == [
        "ConfigMap",
        "PriorityClassMirror",
    ]


def test_class_being_deleted_is_waited_for() -> None:
    assert plan(NAME, UID, spec(), ours(deleting=True)).action is Action.WAIT


# ---- plan_deletion -----------------------------------------------------------------------------


def test_deletion_removes_only_what_this_mirror_created() -> None:
    assert plan_deletion(UID, ours()).action is Action.DELETE
    assert plan_deletion(UID, ours(owner="someone-else")).action is Action.NOTHING
    assert plan_deletion(UID, ours(owner=None)).action is Action.NOTHING
    assert plan_deletion(UID, None).action is Action.NOTHING
    assert plan_deletion(UID, ours(deleting=True)).action is Action.NOTHING
    assert plan_deletion(UID, NativeState(uid="n", value=1)).action is Action.NOTHING


def test_deletion_releases_an_adopted_class() -> None:
    step = plan_deletion(UID, ours(origin=ORIGIN_ADOPTED, owner=None))
    assert step.action is Action.RELEASE
    assert step.patch == {
        "metadata": {"labels": {MANAGED_BY_LABEL: None}, "annotations": {ORIGIN_ANNOTATION: None}}
    }


# ---- reading the native object, validation, counts -------------------------------------------------


def test_native_state_from_api_object() -> None:
    obj = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "value": 7,
        "metadata": {
            "name": NAME,
            "uid": "u",
            "annotations": {ORIGIN_ANNOTATION: "weird"},
            "deletionTimestamp": "2024-01-01T00:00:00Z",
        },
    }
    state = NativeState.from_object(obj)
    assert (state.uid, state.value, state.global_default, state.preemption_policy) == (
        "u",
        7,
        False,
        "PreemptLowerPriority",
    )
    assert state.origin is None  # an unknown origin is not ours
    assert state.deleting
    assert state.owner_uid is None


def test_validate_reports_field_paths() -> None:
    with pytest.raises(PolicyError, match=r"spec\.value: must be less than or equal to 1000000000"):
        validate(NAME, {"value": 2_000_000_000})
    with pytest.raises(PolicyError, match=r"spec\.preemptionPolicy"):
        validate(NAME, {"value": 1, "preemptionPolicy": "Sometimes"})
    with pytest.raises(PolicyError, match=r"metadata\.name: .*reserved"):
        validate("system-mine", {"value": 1})
    assert validate(NAME, {"value": -5, "globalDefault": True}).global_default is True


def test_pod_counts() -> None:
    assert pod_counts({}, 10) == (0, 0)
    assert pod_counts({10: 3, 5: 2, 0: 1}, 10) == (6, 3)


def test_pod_priority_counter_counts_only_the_class() -> None:
    from policy_scheduler.scheduler.model import Pod

    pods = [
        Pod("a", priority=10, priority_class_name=NAME),
        Pod("b", priority=5, priority_class_name=NAME),
        Pod("c", priority=10, priority_class_name="other"),
    ]
    counter = pcm.pod_priority_counter(lambda: pods)
    assert dict(counter(NAME)) == {10: 1, 5: 1}
    assert dict(counter("none")) == {}


# ---- status -----------------------------------------------------------------------------------------


def _types(status: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in status["conditions"]}


def record_of(
    generation: int,
    accepted: PriorityClassMirrorSpec | None,
    error: str | None = None,
    sync: SyncResult | None = None,
) -> MirrorRecord:
    last: LastAccepted[PriorityClassMirrorSpec] = LastAccepted()
    if accepted is not None:
        last.accept(generation, accepted.model_dump(by_alias=True), accepted)
    if error is not None:
        last.reject(error)
    return MirrorRecord(NAME, UID, generation, last, sync)


def test_status_of_a_synced_mirror() -> None:
    record = record_of(3, spec(), None, SyncResult(True, "InSync", "ok", "native-1"))
    status = mirror_status(record, {1000: 4, 10: 1})
    assert status["observedGeneration"] == 3
    assert status["nativeUid"] == "native-1"
    assert (status["podCount"], status["outdatedPodCount"]) == (5, 1)
    assert _types(status) == {
        "Accepted": ("True", "Valid"),
        "Synced": ("True", "InSync"),
        "Ready": ("True", "Synced"),
        "Stalled": ("False", "AsExpected"),
    }
    assert all(c["observedGeneration"] == 3 for c in status["conditions"])


def test_status_of_an_invalid_mirror_and_transition_times() -> None:
    record = record_of(1, None, "spec.value: must be an integer")
    status = mirror_status(record, {})
    accepted = status["conditions"][0]
    assert (accepted["status"], accepted["reason"], accepted["message"]) == (
        "False",
        "InvalidSpec",
        "spec.value: must be an integer",
    )
    assert _types(status)["Ready"] == ("False", "InvalidSpec")
    assert _types(status)["Stalled"] == ("True", "InvalidSpec")  # kstatus: Failed
    assert "podCount" not in status
    # The time moves only when the status of a condition changes.
    record.transitions["Accepted"] = ("False", "2000-01-01T00:00:00Z")
    again = mirror_status(record, {})
    assert again["conditions"][0]["lastTransitionTime"] == "2000-01-01T00:00:00Z"


def test_status_of_a_failed_and_a_pending_sync() -> None:
    failed = record_of(1, spec(), None, SyncResult(False, "Forbidden", "403 Forbidden: no"))
    assert _types(mirror_status(failed, {}))["Synced"] == ("False", "Forbidden")
    assert _types(mirror_status(failed, {}))["Ready"] == ("False", "Forbidden")
    pending = record_of(1, spec())
    assert _types(mirror_status(pending, {}))["Synced"] == ("Unknown", "Pending")


# ---- one controller against a fake API --------------------------------------------------------------


class FakeStatus:
    def __init__(self) -> None:
        self.desired: dict[tuple[str, str], dict[str, Any]] = {}

    def set(self, plural: str, name: str, status: dict[str, Any]) -> None:
        self.desired[(plural, name)] = status

    def forget(self, plural: str, name: str) -> None:
        self.desired.pop((plural, name), None)

    def observe(self, plural: str, name: str, status: Any) -> None:
        pass


class FakeNative:
    """An in-memory PriorityClass collection standing in for kube/priorityclasses.py."""

    def __init__(self) -> None:
        self.objects: dict[str, dict[str, Any]] = {}
        self.calls: list[str] = []
        self.counter = 0

    async def get_priority_class(self, _api: Any, name: str) -> dict[str, Any] | None:
        return self.objects.get(name)

    async def create_priority_class(
        self, _api: Any, obj: dict[str, Any], _fence: Any = None
    ) -> dict[str, Any]:
        self.calls.append("create")
        name = obj["metadata"]["name"]
        if name in self.objects:
            raise ApiError(409, "AlreadyExists", "exists")
        self.counter += 1
        created = {**obj, "metadata": {**obj["metadata"], "uid": f"native-{self.counter}"}}
        self.objects[name] = created
        return created

    async def patch_priority_class(
        self, _api: Any, name: str, patch: dict[str, Any], _fence: Any = None
    ) -> dict[str, Any]:
        self.calls.append("patch")
        obj = self.objects[name]
        for key, value in patch.items():
            if key == "metadata":
                for mkey, mvalue in value.items():
                    if isinstance(mvalue, dict):
                        merged = {**obj["metadata"].get(mkey, {}), **mvalue}
                        obj["metadata"][mkey] = {k: v for k, v in merged.items() if v is not None}
                    else:
                        obj["metadata"][mkey] = mvalue
            elif value is None:
                obj.pop(key, None)
            else:
                obj[key] = value
        return obj

    async def delete_priority_class(self, _api: Any, name: str, uid: str, _fence: Any = None) -> bool:
        self.calls.append("delete")
        if self.objects.get(name, {}).get("metadata", {}).get("uid") != uid:
            return False
        del self.objects[name]
        return True


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeNative:
    native = FakeNative()
    for fn in (
        "get_priority_class",
        "create_priority_class",
        "patch_priority_class",
        "delete_priority_class",
    ):
        monkeypatch.setattr(native_api, fn, getattr(native, fn))
    return native


def mirror(value: int, generation: int = 1, uid: str = UID, **spec_fields: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": NAME, "uid": uid, "generation": generation},
        "spec": {"value": value, **spec_fields},
    }


async def test_controller_create_recreate_and_delete(fake: FakeNative) -> None:
    status = FakeStatus()
    leader = SwitchFence()
    ctl = MirrorController(None, status, lambda _: {1000: 2, 5: 1}, leader)  # type: ignore[arg-type]

    ctl.on_mirror_event(None, mirror(1000))
    await ctl.sync(NAME)
    assert fake.objects[NAME]["value"] == 1000
    first_uid = fake.objects[NAME]["metadata"]["uid"]
    st = status.desired[("priorityclassmirrors", NAME)]
    assert st["nativeUid"] == first_uid
    assert st["outdatedPodCount"] == 1
    assert _types(st)["Synced"] == ("True", "InSync")

    ctl.on_mirror_event("MODIFIED", mirror(2000, generation=2))
    await ctl.sync(NAME)
    assert fake.objects[NAME]["value"] == 2000
    assert fake.objects[NAME]["metadata"]["uid"] != first_uid
    assert fake.calls[-2:] == ["delete", "create"]
    st = status.desired[("priorityclassmirrors", NAME)]
    assert st["observedGeneration"] == 2
    assert st["outdatedPodCount"] == 3
    assert "recreated" in next(c["message"] for c in st["conditions"] if c["type"] == "Synced")

    # A standby leaves the deletion to the leader; on becoming leader it catches up.
    leader.open = False
    ctl.tick_seconds = 0.01
    ctl.start()
    ctl.on_mirror_event("DELETED", mirror(2000, generation=2))
    await settle()  # the worker has handled the deletion
    assert NAME in fake.objects
    assert ("priorityclassmirrors", NAME) not in status.desired
    leader.open = True
    await eventually(lambda: NAME not in fake.objects)  # at the next tick
    await ctl.stop()


async def test_controller_adopts_and_releases(fake: FakeNative) -> None:
    fake.objects[NAME] = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "value": 1000,
        "metadata": {"name": NAME, "uid": "theirs", "labels": {"team": "a"}},
    }
    ctl = MirrorController(None, FakeStatus(), lambda _: {}, SwitchFence())  # type: ignore[arg-type]
    ctl.on_mirror_event(None, mirror(1000, description="ours"))
    await ctl.sync(NAME)
    obj = fake.objects[NAME]
    assert obj["metadata"]["uid"] == "theirs"
    assert obj["description"] == "ours"
    assert obj["metadata"]["annotations"] == {ORIGIN_ANNOTATION: ORIGIN_ADOPTED}
    assert obj["metadata"]["labels"] == {"team": "a", MANAGED_BY_LABEL: MANAGED_BY}
    assert "ownerReferences" not in obj["metadata"]

    ctl.on_mirror_event("DELETED", mirror(1000))
    await ctl.sync(NAME)
    obj = fake.objects[NAME]
    assert obj["metadata"]["uid"] == "theirs"
    assert obj["metadata"]["labels"] == {"team": "a"}
    assert obj["metadata"]["annotations"] == {}


async def test_invalid_spec_touches_nothing(fake: FakeNative) -> None:
    status = FakeStatus()
    ctl = MirrorController(None, status, lambda _: {}, SwitchFence())  # type: ignore[arg-type]
    ctl.on_mirror_event(None, mirror(1000, preemptionPolicy="Sometimes"))
    await ctl.sync(NAME)
    assert fake.calls == []
    assert NAME not in fake.objects
    st = status.desired[("priorityclassmirrors", NAME)]
    assert _types(st)["Accepted"] == ("False", "InvalidSpec")
    assert "spec.preemptionPolicy" in st["conditions"][0]["message"]


async def test_api_error_is_reported_and_retried(fake: FakeNative, monkeypatch: pytest.MonkeyPatch) -> None:
    async def forbidden(_api: Any, _obj: dict[str, Any], _fence: Any = None) -> dict[str, Any]:
        raise ApiError(403, "Forbidden", "priorityclasses is forbidden")

    monkeypatch.setattr(native_api, "create_priority_class", forbidden)
    status = FakeStatus()
    ctl = MirrorController(None, status, lambda _: {}, SwitchFence())  # type: ignore[arg-type]
    ctl.on_mirror_event(None, mirror(1000))
    await ctl.sync(NAME)
    st = status.desired[("priorityclassmirrors", NAME)]
    assert _types(st)["Synced"] == ("False", "Forbidden")
    assert ctl.queue.retries(NAME) == 1
    await ctl.stop()


async def test_invalid_update_keeps_the_last_accepted_spec_in_force(fake: FakeNative) -> None:
    status = FakeStatus()
    ctl = MirrorController(None, status, lambda _: {1000: 1}, SwitchFence())  # type: ignore[arg-type]
    ctl.on_mirror_event(None, mirror(1000))
    await ctl.sync(NAME)
    ctl.on_mirror_event("MODIFIED", mirror(2000, generation=2, preemptionPolicy="Sometimes"))
    await ctl.sync(NAME)
    assert fake.objects[NAME]["value"] == 1000  # generation 1 still in force, still synced
    st = status.desired[("priorityclassmirrors", NAME)]
    assert _types(st)["Accepted"] == ("False", "InvalidSpec")
    assert _types(st)["Synced"] == ("True", "InSync")
    stalled = next(c for c in st["conditions"] if c["type"] == "Stalled")
    assert (stalled["status"], stalled["message"]) == (
        "True",
        "generation 2 was rejected; generation 1 stays in force",
    )


async def test_a_restarted_controller_serves_the_persisted_spec_while_the_stored_one_is_invalid(
    fake: FakeNative,
) -> None:
    status = FakeStatus()
    first = MirrorController(None, status, lambda _: {}, SwitchFence())  # type: ignore[arg-type]
    first.on_mirror_event(None, mirror(1000))
    await first.sync(NAME)
    persisted = status.desired[("priorityclassmirrors", NAME)]
    assert (persisted["lastAcceptedGeneration"], persisted["lastAcceptedSpec"]) == (1, {"value": 1000})

    # The spec is then updated to an invalid one and the operator restarts: the new process only
    # sees generation 2 (invalid) and the status the old one wrote.
    fake.objects[NAME]["value"] = 5  # drifted while nobody watched: repaired to the persisted value
    written = FakeStatus()
    second = MirrorController(None, written, lambda _: {}, SwitchFence())  # type: ignore[arg-type]
    body = mirror(2000, generation=2, preemptionPolicy="Sometimes")
    second.on_mirror_event(None, {**body, "status": persisted})
    await second.sync(NAME)
    assert fake.objects[NAME]["value"] == 1000
    st = written.desired[("priorityclassmirrors", NAME)]
    assert _types(st)["Accepted"] == ("False", "InvalidSpec")
    assert _types(st)["Synced"] == ("True", "InSync")
    assert st["lastAcceptedGeneration"] == 1
    stalled = next(c for c in st["conditions"] if c["type"] == "Stalled")
    assert stalled["message"] == (
        "generation 2 was rejected; generation 1 stays in force (restored from status.lastAcceptedSpec)"
    )


async def test_a_persisted_spec_that_no_longer_validates_is_not_served(fake: FakeNative) -> None:
    status = FakeStatus()
    ctl = MirrorController(None, status, lambda _: {}, SwitchFence())  # type: ignore[arg-type]
    garbage = {"lastAcceptedGeneration": 1, "lastAcceptedSpec": {"value": "high"}}
    ctl.on_mirror_event(None, {**mirror(1000, generation=2, preemptionPolicy="Sometimes"), "status": garbage})
    await ctl.sync(NAME)
    assert fake.calls == []
    assert "lastAcceptedGeneration" not in status.desired[("priorityclassmirrors", NAME)]
