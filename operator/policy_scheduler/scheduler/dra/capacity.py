"""Consumable capacity (structured/internal/incubating/consumable_capacity.go, v0.37.2).

A device that allows multiple allocations is shared by claims; each share consumes capacity: what
its request asks (rounded up by the capacity's request policy), the policy's default, or the whole
capacity. Integer arithmetic only, as upstream with DRAFractionalCapacityRange off.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import ROUND_UP, Decimal

from policy_scheduler.scheduler.dra.model import CapacityRange, CapacityRequestPolicy

MAX_INT64 = 2**63 - 1
_NOT_REPRESENTABLE = "capacity request cannot be represented in the device's range arithmetic"

Capacity = Mapping[str, Decimal]


class CapacityError(Exception):
    """A request the device's range arithmetic cannot represent (upstream's error text)."""


def _value(q: Decimal) -> int:
    """resource.Quantity.Value: rounded up, away from zero."""
    return int(q.to_integral_value(rounding=ROUND_UP))


def format_quantity(q: Decimal) -> str:
    """A quantity string the API server reads as `q` (it canonicalizes what it stores)."""
    if q == q.to_integral_value():
        return str(int(q))
    milli = q * 1000
    if milli == milli.to_integral_value():
        return f"{int(milli)}m"
    return str(q)


def request_fits(
    consumed_before: Capacity,
    requests: Capacity | None,
    capacity: Capacity,
    policies: Mapping[str, CapacityRequestPolicy],
    allocating: Capacity | None,
) -> bool:
    """CmpRequestOverCapacity: does the request fit next to what is consumed and being allocated?"""
    if requests and any(name not in capacity for name in requests):
        return False
    consumed: dict[str, Decimal] = {}
    for name, value in capacity.items():
        requested = requests.get(name) if requests else None
        try:
            amount = _consumed(requested, value, policies.get(name))
        except CapacityError as e:
            raise CapacityError(f'capacity "{name}": {e}') from None
        if amount < 0:
            raise CapacityError(f'capacity "{name}": capacity value is negative')
        consumed[name] = amount
    for name, value in capacity.items():
        amount = consumed[name]
        if _violates_policy(amount, policies.get(name)):
            return False
        total = consumed_before.get(name, Decimal(0)) + amount
        if allocating is not None:
            total += allocating.get(name, Decimal(0))
        if total > value:
            return False
    return True


def consumed_from_request(
    requests: Capacity | None, capacity: Capacity, policies: Mapping[str, CapacityRequestPolicy]
) -> dict[str, Decimal]:
    """GetConsumedCapacityFromRequest: what one share takes of every capacity of the device."""
    out: dict[str, Decimal] = {}
    for name, value in capacity.items():
        requested = requests.get(name) if requests else None
        try:
            out[name] = _consumed(requested, value, policies.get(name))
        except CapacityError as e:
            raise CapacityError(f'capacity "{name}": {e}') from None
    return out


def _consumed(requested: Decimal | None, value: Decimal, policy: CapacityRequestPolicy | None) -> Decimal:
    """calculateConsumedCapacity."""
    if requested is None:
        return policy.default if policy is not None and policy.default is not None else value
    if policy is None:
        return requested
    if policy.valid_range is not None:
        return _round_up_range(requested, policy.valid_range)
    if policy.valid_values:
        return next((v for v in policy.valid_values if requested <= v), requested)
    return requested


def _round_up_range(requested: Decimal, valid: CapacityRange) -> Decimal:
    if requested < valid.min:
        return valid.min
    if valid.step is None:
        return requested
    if requested > MAX_INT64:
        raise CapacityError(f"{_NOT_REPRESENTABLE}: request {format_quantity(requested)} exceeds MaxInt64")
    req, step, low = _value(requested), _value(valid.step), _value(valid.min)
    added = req - low
    n = added // step + (1 if added % step else 0)
    if low >= 0 and n > (MAX_INT64 - low) // step:
        raise CapacityError(
            f"{_NOT_REPRESENTABLE}: rounding request {format_quantity(requested)} up to the next step "
            "passes MaxInt64"
        )
    return Decimal(low + step * n)


def _violates_policy(amount: Decimal, policy: CapacityRequestPolicy | None) -> bool:
    if policy is None:
        return False
    if policy.default is not None and amount == policy.default:
        return False
    if policy.valid_range is not None:
        valid = policy.valid_range
        if valid.max is not None and amount > valid.max:
            return True
        if valid.step is not None:
            return (_value(amount) - _value(valid.min)) % _value(valid.step) != 0
        return False
    if policy.valid_values:
        return amount not in policy.valid_values
    return False
