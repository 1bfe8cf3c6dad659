"""Kubernetes quantities and pod resource requests with kube-scheduler's arithmetic."""

from __future__ import annotations

import math
import re
from decimal import ROUND_CEILING, Decimal, InvalidOperation
from typing import TYPE_CHECKING

from policy_scheduler.scheduler.resource_names import CPU, MEMORY

if TYPE_CHECKING:
    from policy_scheduler.scheduler.model import Container, Pod

DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024
# Quantities saturate at the API's maxAllowed; larger values would overflow the int64 columns.
MAX_QUANTITY = (1 << 63) - 1

_SUFFIXES: dict[str, Decimal] = {
    "": Decimal(1),
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal(10) ** 3,
    "M": Decimal(10) ** 6,
    "G": Decimal(10) ** 9,
    "T": Decimal(10) ** 12,
    "P": Decimal(10) ** 15,
    "E": Decimal(10) ** 18,
    "Ki": Decimal(2) ** 10,
    "Mi": Decimal(2) ** 20,
    "Gi": Decimal(2) ** 30,
    "Ti": Decimal(2) ** 40,
    "Pi": Decimal(2) ** 50,
    "Ei": Decimal(2) ** 60,
}
_QUANTITY = re.compile(
    r"^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E))?$"
)


class QuantityError(ValueError):
    pass


def parse_quantity(value: str | int | float) -> Decimal:
    """Parse a resource.Quantity string into an exact Decimal."""
    if isinstance(value, bool):
        raise QuantityError(f"invalid quantity {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise QuantityError(f"invalid quantity {value!r}")
    if isinstance(value, int | float):
        return Decimal(str(value))
    match = _QUANTITY.fullmatch(value)  # no surrounding whitespace, as ParseQuantity
    if not match:
        raise QuantityError(f"invalid quantity {value!r}")
    number, exponent, suffix = match.groups()
    try:
        amount = Decimal(number)
    except InvalidOperation as exc:  # pragma: no cover - the regex admits only numbers
        raise QuantityError(f"invalid quantity {value!r}") from exc
    if exponent:
        return amount * (Decimal(10) ** int(exponent[1:]))
    return amount * _SUFFIXES[suffix or ""]


def canonical(resource: str, value: str | int | float) -> int:
    """cpu → millicores (Quantity.MilliValue), anything else → base units (Quantity.Value), rounded up."""
    amount = parse_quantity(value)
    if resource == CPU:
        amount *= 1000
    return min(int(amount.to_integral_value(rounding=ROUND_CEILING)), MAX_QUANTITY)


def canonical_list(values: dict[str, str | int | float] | None) -> dict[str, int]:
    return {name: canonical(name, q) for name, q in (values or {}).items()}


def _add(into: dict[str, int], more: dict[str, int]) -> None:
    for name, value in more.items():
        into[name] = into.get(name, 0) + value


def _max_into(into: dict[str, int], other: dict[str, int]) -> None:
    for name, value in other.items():
        # maxResourceList: a key not seen yet is set even to zero (its presence matters for
        # the pod-level non-zero defaults).
        if name not in into or value > into[name]:
            into[name] = value


def _with_defaults(requests: dict[str, int], defaults: dict[str, int]) -> dict[str, int]:
    if not defaults:
        return requests
    merged = dict(requests)
    for name, value in defaults.items():
        merged.setdefault(name, value)
    return merged


def _aggregate(pod: Pod, defaults: dict[str, int]) -> dict[str, int]:
    """component-helpers AggregateContainerRequests, including sidecar (restartable init) rules."""
    reqs: dict[str, int] = {}
    for container in pod.containers:
        _add(reqs, _with_defaults(container.requests, defaults))
    restartable: dict[str, int] = {}
    init_max: dict[str, int] = {}
    for container in pod.init_containers:
        container_reqs = _with_defaults(container.requests, defaults)
        if _is_sidecar(container):
            _add(reqs, container_reqs)
            _add(restartable, container_reqs)
            container_reqs = restartable
        else:
            tmp = dict(container_reqs)
            _add(tmp, restartable)
            container_reqs = tmp
        _max_into(init_max, container_reqs)
    _max_into(reqs, init_max)
    return reqs


def _is_sidecar(container: Container) -> bool:
    return container.restart_policy == "Always"


def _pod_level(pod: Pod) -> dict[str, int]:
    if not pod.pod_requests:
        return {}
    return {
        name: value
        for name, value in pod.pod_requests.items()
        if name in (CPU, MEMORY) or name.startswith("hugepages-")
    }


def _requests(pod: Pod, defaults: dict[str, int]) -> dict[str, int]:
    reqs = _aggregate(pod, defaults)
    reqs.update(_pod_level(pod))
    _add(reqs, pod.overhead)
    return reqs


def pod_requests(pod: Pod) -> dict[str, int]:
    """resourcehelper.PodRequests with pod-level resources and overhead."""
    return _requests(pod, {})


def pod_container_requests(pod: Pod, *, non_zero: bool) -> dict[str, int]:
    """PodRequests with SkipPodLevelResources: containers (with the 100m/200Mi defaults when
    `non_zero`) plus overhead. NodeResourcesFit's scorer in v1.35.4 is built without the
    PodLevelResources gate, so it sees pods this way; BalancedAllocation does not."""
    defaults = {CPU: DEFAULT_MILLI_CPU_REQUEST, MEMORY: DEFAULT_MEMORY_REQUEST} if non_zero else {}
    reqs = _aggregate(pod, defaults)
    _add(reqs, pod.overhead)
    return reqs


def pod_non_zero_requests(pod: Pod) -> tuple[int, int]:
    """The (milli-cpu, memory) kube-scheduler scores with: unset requests get 100m / 200Mi."""
    pod_level = _pod_level(pod)
    if not pod_level:
        defaults = {CPU: DEFAULT_MILLI_CPU_REQUEST, MEMORY: DEFAULT_MEMORY_REQUEST}
    else:
        base = pod_requests(pod)
        defaults = {}
        if CPU not in base:
            defaults[CPU] = DEFAULT_MILLI_CPU_REQUEST
        if MEMORY not in base:
            defaults[MEMORY] = DEFAULT_MEMORY_REQUEST
    reqs = _requests(pod, defaults) if defaults else pod_requests(pod)
    return reqs.get(CPU, 0), reqs.get(MEMORY, 0)
