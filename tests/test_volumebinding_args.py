"""VolumeBindingArgs: v1 defaults and validation as in validation_pluginargs.go."""

from __future__ import annotations

import pytest

from policy_scheduler.policy.errors import PolicyError
from policy_scheduler.policy.plugin_args import default_plugin_args


def test_defaults() -> None:
    assert default_plugin_args("VolumeBinding", None, "args") == {"bindTimeoutSeconds": 600}
    assert default_plugin_args("VolumeBinding", {"bindTimeoutSeconds": 30}, "args") == {
        "bindTimeoutSeconds": 30
    }


@pytest.mark.parametrize(
    ("args", "path", "message"),
    [
        ({"bindTimeoutSeconds": -1}, "args.bindTimeoutSeconds", "should not be a negative value"),
        ({"shape": [{"utilization": 0, "score": 0}]}, "args.shape", "feature gate StorageCapacityScoring"),
    ],
)
def test_invalid(args: dict[str, object], path: str, message: str) -> None:
    with pytest.raises(PolicyError) as info:
        default_plugin_args("VolumeBinding", args, "args")
    assert any(e.path == path and message in e.message for e in info.value.errors), info.value.errors
