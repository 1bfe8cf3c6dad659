"""kube-scheduler's --feature-gates and --emulated-version syntax (component-base's
ComponentGlobalsRegistry flags), for the kube component: the only one a scheduler has."""

from __future__ import annotations

from collections.abc import Iterable

from policy_scheduler.scheduler.versioning.version import KubernetesVersion, VersionError, parse_supported

KUBE_COMPONENT = "kube"
_TRUE = ("1", "t", "T", "TRUE", "true", "True")
_FALSE = ("0", "f", "F", "FALSE", "false", "False")


class FlagError(ValueError):
    """A flag value kube-scheduler's parser would refuse."""


def _parse_bool(name: str, value: str) -> bool:
    """strconv.ParseBool."""
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise FlagError(
        f'invalid value of {name}={value}, err: strconv.ParseBool: parsing "{value}": invalid syntax'
    )


def parse_feature_gates(values: Iterable[str]) -> tuple[tuple[str, bool], ...]:
    """`--feature-gates` values, each "A=true,B=false" (optionally "kube:A=true"), in order."""
    settings: list[tuple[str, bool]] = []
    for value in values:
        for item in value.split(","):
            item = item.strip()
            if not item:
                continue
            component, _, setting = item.rpartition(":")
            if component and component != KUBE_COMPONENT:
                raise FlagError(f"component not registered: {component}")
            name, sep, raw = setting.partition("=")
            name = name.strip()
            if not sep:
                raise FlagError(f"missing bool value for {name}")
            settings.append((name, _parse_bool(name, raw.strip())))
    return tuple(settings)


def parse_emulated_version(value: str) -> KubernetesVersion:
    """`--emulated-version`: "1.36" or "kube=1.36"; major.minor only, a supported release."""
    component, sep, text = value.partition("=")
    if not sep:
        component, text = KUBE_COMPONENT, value
    component, text = component.strip(), text.strip()
    if component != KUBE_COMPONENT:
        raise FlagError(f"component not registered: {component}")
    parts = text.lstrip("v").split(".")
    if len(parts) > 2 and parts[2] not in ("0", ""):
        raise FlagError(f"patch version not allowed, got: {component}={text}")
    try:
        return parse_supported(text)
    except VersionError as exc:
        raise FlagError(str(exc)) from None
