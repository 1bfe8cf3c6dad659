"""Which release to decide like, and kube-scheduler's --feature-gates / --emulated-version syntax."""

from __future__ import annotations

import pytest

from policy_scheduler.scheduler.versioning.features import FeatureGateError, Features
from policy_scheduler.scheduler.versioning.flags import FlagError, parse_emulated_version, parse_feature_gates
from policy_scheduler.scheduler.versioning.semantics import (
    EMULATED,
    NEWER_THAN_SUPPORTED,
    OLDER_THAN_SUPPORTED,
    REQUESTED,
    SERVER_VERSION_UNKNOWN,
    SUPPORTED,
    choose_semantics,
    command_semantics,
)
from policy_scheduler.scheduler.versioning.version import (
    V1_35,
    V1_36,
    V1_37,
    KubernetesVersion,
    VersionError,
    nearest_supported,
    parse_supported,
)


@pytest.mark.parametrize(
    ("text", "version"),
    [
        ("v1.37.2", V1_37),
        ("1.36", V1_36),
        ("v1.35.4+k3s1", V1_35),
        ("v1.38.0-alpha.1", KubernetesVersion(1, 38)),
        (" v1.34.9 ", KubernetesVersion(1, 34)),
    ],
)
def test_versions_parse_to_major_minor(text: str, version: KubernetesVersion) -> None:
    assert KubernetesVersion.parse(text) == version


@pytest.mark.parametrize("text", ["", "1", "latest", "v1.x"])
def test_not_versions(text: str) -> None:
    with pytest.raises(VersionError, match="is not a Kubernetes version"):
        KubernetesVersion.parse(text)


def test_only_supported_releases_can_be_asked_for() -> None:
    assert parse_supported("v1.36.3") == V1_36
    with pytest.raises(
        VersionError, match=r"Kubernetes v1.34 is not supported \(supported: v1.35, v1.36, v1.37\)"
    ):
        parse_supported("1.34")


def test_nearest_supported() -> None:
    assert nearest_supported(KubernetesVersion(1, 30)) == V1_35
    assert nearest_supported(V1_36) == V1_36
    assert nearest_supported(KubernetesVersion(2, 0)) == V1_37


@pytest.mark.parametrize(
    ("server", "version", "reason", "why"),
    [
        ("v1.35.4", V1_35, SUPPORTED, "API server v1.35.4"),
        ("v1.37.2", V1_37, SUPPORTED, "API server v1.37.2"),
        ("v1.33.1", V1_35, OLDER_THAN_SUPPORTED, "older than the oldest supported release v1.35"),
        ("v1.38.0", V1_37, NEWER_THAN_SUPPORTED, "newer than the newest supported release v1.37"),
        (None, V1_37, SERVER_VERSION_UNKNOWN, "the API server's version is unknown (timeout)"),
        ("banana", V1_37, SERVER_VERSION_UNKNOWN, "'banana' is not a release"),
    ],
)
def test_server_version_chooses_the_release(
    server: str | None, version: KubernetesVersion, reason: str, why: str
) -> None:
    chosen = choose_semantics(server, unknown_because="timeout")
    assert chosen.features == Features(version)
    assert chosen.reason == reason
    assert why in chosen.why
    assert chosen.matches_cluster == (reason == SUPPORTED)
    assert f"deciding as kube-scheduler {version} does" in chosen.describe()


def test_emulated_version_wins_and_gates_apply() -> None:
    chosen = choose_semantics("v1.37.2", emulated=V1_36, feature_gates=(("OpportunisticBatching", False),))
    assert chosen.reason == EMULATED
    assert chosen.matches_cluster
    assert chosen.features == Features(V1_36, (("OpportunisticBatching", False),))
    assert chosen.describe().startswith(
        "deciding as kube-scheduler v1.36 with OpportunisticBatching=false does (--emulated-version; API server v1.37.2)"
    )


def test_gates_that_do_not_fit_the_release_are_refused() -> None:
    with pytest.raises(FeatureGateError, match="locked to true"):
        choose_semantics("v1.37.2", feature_gates=(("NodeDeclaredFeatures", False),))


def test_describe_lists_what_is_not_implemented() -> None:
    text = choose_semantics("v1.36.3").describe()
    assert "not implemented by policy-scheduler: DRADeviceBindingConditions=true" in text


def test_command_semantics() -> None:
    assert command_semantics(None).features == Features(V1_37)
    assert command_semantics(V1_35, "v1.37.2", from_cluster=True).reason == REQUESTED
    from_cluster = command_semantics(None, "v1.36.3", from_cluster=True)
    assert (from_cluster.features, from_cluster.reason) == (Features(V1_36), SUPPORTED)
    assert command_semantics(None, None, from_cluster=True).reason == SERVER_VERSION_UNKNOWN


@pytest.mark.parametrize(
    ("values", "settings"),
    [
        (["A=true,B=false"], (("A", True), ("B", False))),
        (["kube:A=1", "B=F, C=True"], (("A", True), ("B", False), ("C", True))),
        (["A=true,", ""], (("A", True),)),
    ],
)
def test_feature_gates_flag(values: list[str], settings: tuple[tuple[str, bool], ...]) -> None:
    assert parse_feature_gates(values) == settings


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (["A"], "missing bool value for A"),
        (["A=yes"], 'invalid value of A=yes, err: strconv.ParseBool: parsing "yes": invalid syntax'),
        (["wardle:A=true"], "component not registered: wardle"),
    ],
)
def test_feature_gates_flag_refused(values: list[str], message: str) -> None:
    with pytest.raises(FlagError, match=message):
        parse_feature_gates(values)


@pytest.mark.parametrize(
    ("value", "version"), [("1.36", V1_36), ("kube=1.35", V1_35), ("kube=1.37.0", V1_37)]
)
def test_emulated_version_flag(value: str, version: KubernetesVersion) -> None:
    assert parse_emulated_version(value) == version


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("kube=1.36.1", "patch version not allowed, got: kube=1.36.1"),
        ("wardle=1.2", "component not registered: wardle"),
        ("1.30", "Kubernetes v1.30 is not supported"),
    ],
)
def test_emulated_version_flag_refused(value: str, message: str) -> None:
    with pytest.raises(FlagError, match=message):
        parse_emulated_version(value)
