"""VolumeBindingArgs: v1 defaults and validation as in validation_pluginargs.go, per release:
`shape` follows the StorageCapacityScoring gate (off in v1.35 and v1.36, on from v1.37)."""

from __future__ import annotations

import pytest

from policy_scheduler.policy.errors import PolicyError
from policy_scheduler.policy.plugin_args import default_plugin_args
from policy_scheduler.scheduler.versioning.features import Features
from policy_scheduler.scheduler.versioning.version import V1_35, V1_36, V1_37

V135, V136, V137 = Features(V1_35), Features(V1_36), Features(V1_37)
V137_WITHOUT_SCORING = Features(V1_37, (("StorageCapacityScoring", False),))
DEFAULT_SHAPE = [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]


@pytest.mark.parametrize("features", [V135, V136, V137_WITHOUT_SCORING], ids=["v1.35", "v1.36", "v1.37-off"])
def test_defaults_without_the_gate(features: Features) -> None:
    assert default_plugin_args("VolumeBinding", None, "args", features) == {"bindTimeoutSeconds": 600}
    assert default_plugin_args("VolumeBinding", {"bindTimeoutSeconds": 30}, "args", features) == {
        "bindTimeoutSeconds": 30
    }


def test_v137_defaults_the_shape() -> None:
    """SetDefaults_VolumeBindingArgs: with StorageCapacityScoring, an empty shape is full nodes last."""
    assert default_plugin_args("VolumeBinding", None, "args", V137) == {
        "bindTimeoutSeconds": 600,
        "shape": DEFAULT_SHAPE,
    }
    custom = [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
    assert default_plugin_args("VolumeBinding", {"shape": custom}, "args", V137)["shape"] == custom


@pytest.mark.parametrize(
    ("features", "args", "path", "message"),
    [
        (V135, {"bindTimeoutSeconds": -1}, "args.bindTimeoutSeconds", "should not be a negative value"),
        (V137, {"bindTimeoutSeconds": -1}, "args.bindTimeoutSeconds", "should not be a negative value"),
        (
            V135,
            {"shape": [{"utilization": 0, "score": 0}]},
            "args.shape",
            "unexpected field `shape`, remove it or turn on the feature gate StorageCapacityScoring",
        ),
        (
            V137_WITHOUT_SCORING,
            {"shape": [{"utilization": 0, "score": 0}]},
            "args.shape",
            "unexpected field `shape`, remove it or turn on the feature gate StorageCapacityScoring",
        ),
        (
            V137,
            {"shape": [{"utilization": 50, "score": 1}, {"utilization": 10, "score": 2}]},
            "args.shape[1].utilization",
            "values must be sorted in increasing order",
        ),
        (
            V137,
            {"shape": [{"utilization": 0, "score": 11}]},
            "args.shape[0].score",
            "not in valid range [0, 10]",
        ),
    ],
)
def test_invalid(features: Features, args: dict[str, object], path: str, message: str) -> None:
    with pytest.raises(PolicyError) as info:
        default_plugin_args("VolumeBinding", args, "args", features)
    assert any(e.path == path and message in e.message for e in info.value.errors), info.value.errors
