"""A tiny synchronous kubectl wrapper for e2e tests (real API server, no mocks)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any, TypeVar

from policy_scheduler.devcluster.versions import bin_dir
from polling import wait_until

T = TypeVar("T")


class Kubectl:
    def __init__(self, kubeconfig: Path) -> None:
        self.kubeconfig = kubeconfig
        self.binary = str(bin_dir() / "kubectl")

    def run(
        self, *args: str, stdin: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        cmd = [self.binary, "--kubeconfig", str(self.kubeconfig), *args]
        result = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=60, check=False)
        if check and result.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed: {result.stderr.strip()}")
        return result

    def apply(self, *objects: dict[str, Any]) -> None:
        items = list(objects)
        body = {"apiVersion": "v1", "kind": "List", "items": items}
        self.run("apply", "-f", "-", stdin=json.dumps(body))

    def create(self, *objects: dict[str, Any]) -> None:
        body = {"apiVersion": "v1", "kind": "List", "items": list(objects)}
        self.run("create", "-f", "-", stdin=json.dumps(body))

    def get(self, kind: str, name: str = "", namespace: str | None = None) -> Any:
        args = ["get", kind, *([name] if name else []), "-o", "json"]
        if namespace:
            args += ["-n", namespace]
        return json.loads(self.run(*args).stdout)

    def items(
        self, kind: str, namespace: str | None = None, selector: str | None = None
    ) -> list[dict[str, Any]]:
        args = ["get", kind, "-o", "json"]
        args += ["-n", namespace] if namespace else ["-A"]
        if selector:
            args += ["-l", selector]
        result: list[dict[str, Any]] = json.loads(self.run(*args).stdout)["items"]
        return result

    def delete(self, kind: str, name: str, namespace: str | None = None, wait: bool = False) -> None:
        args = ["delete", kind, name, "--ignore-not-found", f"--wait={'true' if wait else 'false'}"]
        if namespace:
            args += ["-n", namespace]
        self.run(*args)

    def patch(self, kind: str, name: str, patch: dict[str, Any], patch_type: str = "merge") -> None:
        self.run("patch", kind, name, "--type", patch_type, "-p", json.dumps(patch))


# The old name, for e2e modules that still import it from here.
wait_for = wait_until


def namespace(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels or {}}}


def pod(
    name: str,
    namespace: str,
    scheduler: str,
    *,
    cpu: str = "100m",
    memory: str = "128Mi",
    labels: dict[str, str] | None = None,
    priority_class: str | None = None,
    extra_spec: dict[str, Any] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedulerName": scheduler,
        "terminationGracePeriodSeconds": 0,
        "containers": [
            {
                "name": "c",
                "image": "registry.k8s.io/pause:3.10",
                "resources": {"requests": {"cpu": cpu, "memory": memory}},
            }
        ],
    }
    if priority_class:
        spec["priorityClassName"] = priority_class
    spec.update(extra_spec or {})
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "spec": spec,
    }


def profile(name: str, scheduler: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.policy-scheduler.io/v1alpha1",
        "kind": "SchedulingProfile",
        "metadata": {"name": name},
        "spec": {"schedulerName": scheduler, **spec},
    }


def scored_by_fit(strategy: str) -> dict[str, Any]:
    """A profile spec where only NodeResourcesFit scores (BalancedAllocation could tie the
    totals), with `strategy`: MostAllocated packs, LeastAllocated spreads."""
    return {
        "plugins": {"score": {"disabled": [{"name": "NodeResourcesBalancedAllocation"}]}},
        **fit_strategy(strategy),
    }


def fit_strategy(strategy: str) -> dict[str, Any]:
    """NodeResourcesFit's scoring strategy, cpu and memory weighted alike."""
    return {
        "pluginConfig": [
            {
                "name": "NodeResourcesFit",
                "args": {
                    "scoringStrategy": {
                        "type": strategy,
                        "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}],
                    }
                },
            }
        ]
    }


def condition(obj: dict[str, Any], type_: str) -> dict[str, Any] | None:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == type_:
            return dict(cond)
    return None
