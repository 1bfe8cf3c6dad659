"""resource.k8s.io/v1 objects as the scheduler sees them: ResourceSlice, DeviceClass, ResourceClaim.

Only what allocation reads is kept. Attribute names are stored as the slice wrote them (qualified
or not); capacities are quantities (Decimal, base units). CEL selectors stay expressions here: the
core never parses CEL, a `SelectorCompiler` injected by the caller turns them into predicates.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, NamedTuple, Protocol

from policy_scheduler.scheduler.model import NodeSelectorTerm

ALLOCATION_MODE_EXACT_COUNT = "ExactCount"
ALLOCATION_MODE_ALL = "All"
# resourceapi.AllocationResultsMaxSize, ResourceClaimReservedForMaxSize, FirstAvailableDeviceRequestMaxSize.
ALLOCATION_RESULTS_MAX_SIZE = 32
RESERVED_FOR_MAX_SIZE = 256
FIRST_AVAILABLE_MAX_SIZE = 8
# resourceapi.Finalizer: set on a claim the scheduler allocated.
CLAIM_FINALIZER = "resource.kubernetes.io/delete-protection"
# resourceapi.DeviceTaintEffect*: only these two keep a device from being allocated.
TAINT_EFFECT_NO_SCHEDULE = "NoSchedule"
TAINT_EFFECT_NO_EXECUTE = "NoExecute"
TOLERATION_OP_EQUAL = "Equal"
TOLERATION_OP_EXISTS = "Exists"
# resourceapi.AllocationConfigSource*.
CONFIG_SOURCE_CLASS = "FromClass"
CONFIG_SOURCE_CLAIM = "FromClaim"

AttributeValue = str | int | bool


@dataclass(frozen=True, slots=True)
class DeviceAttribute:
    """One of string/int/bool/version; `kind` tells which (matchAttribute compares kinds too)."""

    kind: str  # "string" | "int" | "bool" | "version"
    value: AttributeValue


@dataclass(frozen=True, slots=True)
class DeviceTaint:
    key: str
    effect: str
    value: str = ""
    time_added: float | None = None  # epoch seconds


@dataclass(frozen=True, slots=True)
class DeviceToleration:
    key: str = ""
    operator: str = TOLERATION_OP_EQUAL
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None

    def tolerates(self, taint: DeviceTaint) -> bool:
        """resourceclaim.ToleratesTaint."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator in ("", TOLERATION_OP_EQUAL):
            return self.value == taint.value
        return self.operator == TOLERATION_OP_EXISTS


@dataclass(frozen=True, slots=True)
class CounterSet:
    """A ResourceSlice's sharedCounters entry: counter name -> quantity."""

    name: str
    counters: Mapping[str, Decimal] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class CounterConsumption:
    """A device's consumesCounters entry: what it draws from one counter set of its pool."""

    counter_set: str
    counters: Mapping[str, Decimal] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class CapacityRange:
    """CapacityRequestPolicyRange."""

    min: Decimal
    max: Decimal | None = None
    step: Decimal | None = None


@dataclass(frozen=True, slots=True)
class CapacityRequestPolicy:
    """How a shared device's capacity may be requested (DRAConsumableCapacity)."""

    default: Decimal | None = None
    valid_values: tuple[Decimal, ...] = ()
    valid_range: CapacityRange | None = None


@dataclass(frozen=True, slots=True)
class Device:
    name: str
    attributes: Mapping[str, DeviceAttribute] = field(default_factory=dict)
    capacity: Mapping[str, Decimal] = field(default_factory=dict)
    consumes_counters: tuple[CounterConsumption, ...] = ()
    # Binding conditions are not implemented: such devices are never allocated (upstream skips
    # them the same way with DRADeviceBindingConditions off).
    binding_conditions: bool = False
    taints: tuple[DeviceTaint, ...] = ()
    # Per-device node selection (in a slice with perDeviceNodeSelection): one of these is set.
    node_name: str = ""
    node_selector: tuple[NodeSelectorTerm, ...] | None = None
    all_nodes: bool = False
    # DRAConsumableCapacity: several claims may share the device, each consuming capacity.
    allow_multiple_allocations: bool = False
    capacity_policies: Mapping[str, CapacityRequestPolicy] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ResourcePool:
    name: str
    generation: int = 0
    resource_slice_count: int = 1


@dataclass(frozen=True, slots=True)
class ResourceSlice:
    name: str
    driver: str
    pool: ResourcePool
    devices: tuple[Device, ...] = ()
    node_name: str = ""
    # One of node_name / node_selector / all_nodes selects the nodes that can use the devices.
    node_selector: tuple[NodeSelectorTerm, ...] | None = None
    all_nodes: bool = False
    per_device_node_selection: bool = False
    shared_counters: tuple[CounterSet, ...] = ()


@dataclass(frozen=True, slots=True)
class DeviceConfiguration:
    """One DeviceConfiguration (today an `opaque` driver config), kept as the API wrote it."""

    raw: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class DeviceClaimConfiguration:
    """A claim's spec.devices.config entry: empty `requests` means every request."""

    config: DeviceConfiguration
    requests: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class DeviceClass:
    name: str
    selectors: tuple[str, ...] = ()  # CEL expressions
    uid: str = ""
    config: tuple[DeviceConfiguration, ...] = ()
    # spec.extendedResourceName (DRAExtendedResource) and the creation time that settles which of
    # two classes naming the same resource serves it.
    extended_resource_name: str | None = None
    created: float = 0.0


@dataclass(frozen=True, slots=True)
class DeviceSubRequest:
    name: str
    device_class_name: str
    selectors: tuple[str, ...] = ()
    allocation_mode: str = ALLOCATION_MODE_EXACT_COUNT
    count: int = 1
    tolerations: tuple[DeviceToleration, ...] = ()
    # capacity.requests (DRAConsumableCapacity).
    capacity_requests: Mapping[str, Decimal] | None = None


@dataclass(frozen=True, slots=True)
class ExactDeviceRequest:
    device_class_name: str
    selectors: tuple[str, ...] = ()
    allocation_mode: str = ALLOCATION_MODE_EXACT_COUNT
    count: int = 1
    admin_access: bool | None = None
    tolerations: tuple[DeviceToleration, ...] = ()
    capacity_requests: Mapping[str, Decimal] | None = None


@dataclass(frozen=True, slots=True)
class DeviceRequest:
    name: str
    exactly: ExactDeviceRequest | None = None
    first_available: tuple[DeviceSubRequest, ...] = ()


@dataclass(frozen=True, slots=True)
class DeviceConstraint:
    requests: tuple[str, ...] = ()
    match_attribute: str | None = None
    # DRAConsumableCapacity.
    distinct_attribute: str | None = None


@dataclass(frozen=True, slots=True)
class DeviceRequestAllocationResult:
    request: str  # "<request>" or "<request>/<subrequest>"
    driver: str
    pool: str
    device: str
    admin_access: bool | None = None
    # The request's tolerations, copied when DRADeviceTaints is on.
    tolerations: tuple[DeviceToleration, ...] = ()
    # A share of a device that allows multiple allocations (DRAConsumableCapacity).
    share_id: str | None = None
    consumed_capacity: Mapping[str, Decimal] | None = None


@dataclass(frozen=True, slots=True)
class DeviceAllocationConfiguration:
    """status.allocation.devices.config: where it came from and which requests it is for."""

    source: str  # CONFIG_SOURCE_CLASS | CONFIG_SOURCE_CLAIM
    config: DeviceConfiguration
    requests: tuple[str, ...] = ()  # empty: every request


@dataclass(frozen=True, slots=True)
class AllocationResult:
    results: tuple[DeviceRequestAllocationResult, ...] = ()
    # None: usable on every node; else ORed terms (the allocator writes at most one).
    node_selector: tuple[NodeSelectorTerm, ...] | None = None
    config: tuple[DeviceAllocationConfiguration, ...] = ()


@dataclass(frozen=True, slots=True)
class ConsumerReference:
    resource: str  # "pods"
    name: str
    uid: str
    api_group: str = ""


@dataclass(frozen=True, slots=True)
class ResourceClaim:
    name: str
    namespace: str = "default"
    uid: str = ""
    requests: tuple[DeviceRequest, ...] = ()
    constraints: tuple[DeviceConstraint, ...] = ()
    allocation: AllocationResult | None = None
    reserved_for: tuple[ConsumerReference, ...] = ()
    deletion_timestamp: float | None = None
    # UID of the controlling owner (a pod, for claims generated from a template).
    owner_pod_uid: str = ""
    finalizers: tuple[str, ...] = ()
    resource_version: str = ""
    config: tuple[DeviceClaimConfiguration, ...] = ()
    # The claim the scheduler created for a pod's extended resources (its annotation), and the
    # name of the controlling pod: such a claim is found by annotation and owner, not by the spec.
    extended_resource: bool = False
    owner_pod_name: str = ""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def can_be_reserved(self) -> bool:
        """resourceclaim.CanBeReserved."""
        return len(self.reserved_for) < RESERVED_FOR_MAX_SIZE

    def is_reserved_for(self, pod_uid: str) -> bool:
        """resourceclaim.IsReservedForPod."""
        return any(ref.uid == pod_uid for ref in self.reserved_for)


@dataclass(frozen=True, slots=True)
class DeviceTaintRule:
    """resource.k8s.io DeviceTaintRule: `taint` on every device its selector names (None: each)."""

    name: str
    taint: DeviceTaint
    driver: str | None = None
    pool: str | None = None
    device: str | None = None
    # No deviceSelector at all matches no device.
    has_selector: bool = True

    def applies(self, driver: str, pool: str, device: str) -> bool:
        return (
            self.has_selector
            and (self.driver is None or self.driver == driver)
            and (self.pool is None or self.pool == pool)
            and (self.device is None or self.device == device)
        )


class DeviceId(NamedTuple):
    """A device's driver, pool and name; a tuple so that sets and dicts of them hash in C (the
    allocator looks devices up in such sets for every node it tries)."""

    driver: str
    pool: str
    device: str

    def __str__(self) -> str:
        return f"{self.driver}/{self.pool}/{self.device}"


class DeviceSelector(Protocol):
    """A compiled selector: does this device (of this driver) match? Raises SelectorError at runtime."""

    def __call__(self, driver: str, device: Device) -> bool: ...


class SelectorError(Exception):
    """A selector that cannot be compiled or evaluated; the text names the cause."""


# Compiles one CEL expression; raises SelectorError (e.g. naming an unsupported function).
SelectorCompiler = Callable[[str], DeviceSelector]


def no_cel_compiler(expression: str) -> DeviceSelector:
    """The default when nobody injected a compiler: every selector is an error, never a pass."""
    raise SelectorError("no CEL compiler configured for device selectors")
