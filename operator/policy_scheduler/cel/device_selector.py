"""CEL device selectors (resource.k8s.io DeviceSelector.cel) compiled with cel-python (celpy).

The device is seen as upstream's dynamic-resource-allocation/cel does: `device.driver`,
`device.attributes[domain][name]` and `device.capacity[domain][name]`, unqualified names living in
the driver's domain. Kubernetes' CEL libraries that selectors use are added: quantity()
(compareTo, isGreaterThan, isLessThan, asInteger, sign, isInteger), semver() (version attributes
are semvers; compareTo, isGreaterThan, isLessThan, major, minor, patch) and isQuantity/isSemver.
Any other function the expression calls is a SelectorError naming it: never a silent pass.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from functools import lru_cache, total_ordering
from typing import Any

import celpy
from celpy import celtypes
from celpy.celparser import CELParseError
from celpy.evaluation import CELEvalError

from policy_scheduler.scheduler.dra.model import Device, DeviceSelector, SelectorError
from policy_scheduler.scheduler.resources import parse_quantity
from policy_scheduler.validate.cel import unsupported_functions


@total_ordering
@dataclass(frozen=True, slots=True)
class Quantity:
    value: Decimal

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Quantity):
            return NotImplemented
        return self.value < other.value


@total_ordering
@dataclass(frozen=True, slots=True)
class Semver:
    major: int
    minor: int
    patch: int
    pre: str = ""

    def _key(self) -> tuple[int, int, int, int, str]:
        # A pre-release sorts before its release (semver 2.0.0, simplified to a string compare).
        return (self.major, self.minor, self.patch, 0 if self.pre else 1, self.pre)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Semver):
            return NotImplemented
        return self._key() < other._key()


def _parse_semver(text: str) -> Semver:
    core, _, pre = str(text).partition("-")
    core = core.partition("+")[0]
    parts = core.split(".")
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        raise ValueError(f"invalid semver {text!r}")
    return Semver(int(parts[0]), int(parts[1]), int(parts[2]), pre.partition("+")[0])


def _quantity(text: Any) -> Quantity:
    try:
        return Quantity(parse_quantity(str(text)))
    except (InvalidOperation, ValueError) as e:
        raise ValueError(f"invalid quantity {text!r}") from e


def _is(parse: Callable[[str], object]) -> Callable[[Any], celtypes.BoolType]:
    def check(text: Any) -> celtypes.BoolType:
        try:
            parse(str(text))
        except ValueError:
            return celtypes.BoolType(False)
        return celtypes.BoolType(True)

    return check


def _cmp(a: Any, b: Any) -> celtypes.IntType:
    if isinstance(a, (Quantity, Semver)) and type(a) is type(b):
        return celtypes.IntType(0 if a == b else (-1 if a < b else 1))
    raise TypeError(f"compareTo: unsupported operands {type(a).__name__}, {type(b).__name__}")


def _sign(q: Quantity) -> celtypes.IntType:
    return celtypes.IntType((q.value > 0) - (q.value < 0))


EXTENSIONS: dict[str, Callable[..., Any]] = {
    "quantity": _quantity,
    "isQuantity": _is(_quantity),
    "semver": _parse_semver,
    "isSemver": _is(_parse_semver),
    "compareTo": _cmp,
    "isGreaterThan": lambda a, b: celtypes.BoolType(_cmp(a, b) > 0),
    "isLessThan": lambda a, b: celtypes.BoolType(_cmp(a, b) < 0),
    "asInteger": lambda q: celtypes.IntType(int(q.value)),
    "isInteger": lambda q: celtypes.BoolType(q.value == q.value.to_integral_value()),
    "sign": _sign,
    "major": lambda v: celtypes.IntType(v.major),
    "minor": lambda v: celtypes.IntType(v.minor),
    "patch": lambda v: celtypes.IntType(v.patch),
}


def _split(name: str, driver: str) -> tuple[str, str]:
    domain, sep, rest = name.partition("/")
    return (domain, rest) if sep else (driver, name)


def _value(kind: str, value: object) -> Any:
    if kind == "version":
        return _parse_semver(str(value))
    if kind == "bool":
        return celtypes.BoolType(bool(value))
    if kind == "int":
        return celtypes.IntType(int(value))  # type: ignore[call-overload]
    return celtypes.StringType(str(value))


def device_activation(driver: str, device: Device) -> dict[str, Any]:
    attributes: dict[str, dict[str, Any]] = {}
    for name, attr in device.attributes.items():
        domain, short = _split(name, driver)
        attributes.setdefault(domain, {})[short] = _value(attr.kind, attr.value)
    capacity: dict[str, dict[str, Any]] = {}
    for name, q in device.capacity.items():
        domain, short = _split(name, driver)
        capacity.setdefault(domain, {})[short] = Quantity(q)

    def cel_map(d: dict[str, dict[str, Any]]) -> celtypes.MapType:
        return celtypes.MapType(
            {
                celtypes.StringType(k): celtypes.MapType(
                    {celtypes.StringType(n): v for n, v in inner.items()}
                )
                for k, inner in d.items()
            }
        )

    return {
        "device": celtypes.MapType(
            {
                celtypes.StringType("driver"): celtypes.StringType(driver),
                celtypes.StringType("attributes"): cel_map(attributes),
                celtypes.StringType("capacity"): cel_map(capacity),
                celtypes.StringType("allowMultipleAllocations"): celtypes.BoolType(
                    device.allow_multiple_allocations
                ),
            }
        )
    }


@dataclass(frozen=True, slots=True)
class _Compiled:
    expression: str
    program: celpy.Runner

    def __call__(self, driver: str, device: Device) -> bool:
        try:
            result = self.program.evaluate(device_activation(driver, device))
        except (CELEvalError, TypeError, ValueError, KeyError) as e:
            raise SelectorError(_eval_message(e)) from e
        if isinstance(result, CELEvalError):
            raise SelectorError(_eval_message(result))
        if not isinstance(result, celtypes.BoolType):
            raise SelectorError(f"expression must return bool, got {type(result).__name__}")
        return bool(result)


_NO_MEMBER = re.compile(r"no such member in mapping: '(.*)'")


def _eval_message(e: BaseException) -> str:
    args = getattr(e, "args", ())
    text = str(args[0]) if args else str(e)
    # cel-go's wording, which upstream's messages carry.
    return _NO_MEMBER.sub(r"no such key: \1", text)


@lru_cache(maxsize=1024)
def compile_selector(expression: str) -> DeviceSelector:
    """A SelectorCompiler (scheduler.dra.model) for DraServices; compiled once per expression."""
    missing = [name for name in unsupported_functions(expression) if name not in EXTENSIONS]
    if missing:
        raise SelectorError(f"unsupported CEL function(s) for device selectors: {', '.join(missing)}")
    env = celpy.Environment()
    try:
        ast = env.compile(expression)
    except CELParseError as e:
        raise SelectorError(f"compilation failed: {e.args[0] if e.args else e}") from e
    return _Compiled(expression, env.program(ast, functions=EXTENSIONS))
