"""Just the API calls the harness makes, over the dev cluster's small synchronous client."""

from __future__ import annotations

import base64
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from policy_scheduler.devcluster.kubeapi import ApiError, KubeApi

JSON = dict[str, Any]
_COLLECTIONS = {
    "Namespace": "/api/v1/namespaces",
    "Node": "/api/v1/nodes",
    "PriorityClass": "/apis/scheduling.k8s.io/v1/priorityclasses",
    "SchedulingProfile": "/apis/scheduling.policy-scheduler.io/v1alpha1/schedulingprofiles",
    "StorageClass": "/apis/storage.k8s.io/v1/storageclasses",
    "PersistentVolume": "/api/v1/persistentvolumes",
    "CSINode": "/apis/storage.k8s.io/v1/csinodes",
    "DeviceClass": "/apis/resource.k8s.io/v1/deviceclasses",
    "ResourceSlice": "/apis/resource.k8s.io/v1/resourceslices",
}
STORAGE_LISTS = {
    **{k: _COLLECTIONS[k] for k in ("StorageClass", "PersistentVolume", "CSINode")},
    "PersistentVolumeClaim": "/api/v1/persistentvolumeclaims",
}


class ClusterApi:
    def __init__(self, api: KubeApi) -> None:
        self.api = api

    @classmethod
    def from_kubeconfig(cls, path: Path) -> ClusterApi:
        """A token kubeconfig, as the dev cluster writes (client certificates are not supported)."""
        config = yaml.safe_load(path.read_text())
        context_name = config.get("current-context")
        context = next(c["context"] for c in config["contexts"] if c["name"] == context_name)
        cluster = next(c["cluster"] for c in config["clusters"] if c["name"] == context["cluster"])
        user = next(u["user"] for u in config["users"] if u["name"] == context["user"])
        ca_file: Path | None = None
        if cluster.get("certificate-authority-data"):
            handle = tempfile.NamedTemporaryFile("wb", suffix=".crt", delete=False)  # noqa: SIM115
            with handle:
                handle.write(base64.b64decode(cluster["certificate-authority-data"]))
            ca_file = Path(handle.name)
        elif cluster.get("certificate-authority"):
            ca_file = Path(cluster["certificate-authority"])
        token = user.get("token")
        if not token:
            raise ValueError(f"{path}: the parity harness needs a token user")
        return cls(KubeApi(cluster["server"], token, ca_file))

    @staticmethod
    def path(obj: Mapping[str, Any]) -> str:
        kind = obj["kind"]
        if kind == "Pod":
            return f"/api/v1/namespaces/{obj['metadata']['namespace']}/pods"
        if kind == "PersistentVolumeClaim":
            return f"/api/v1/namespaces/{obj['metadata']['namespace']}/persistentvolumeclaims"
        if kind == "PodDisruptionBudget":
            return f"/apis/policy/v1/namespaces/{obj['metadata']['namespace']}/poddisruptionbudgets"
        if kind == "ResourceClaim":
            return f"/apis/resource.k8s.io/v1/namespaces/{obj['metadata']['namespace']}/resourceclaims"
        return _COLLECTIONS[kind]

    def create(self, obj: Mapping[str, Any], *, exist_ok: bool = False) -> JSON:
        try:
            return self.api.post(self.path(obj), dict(obj))
        except ApiError as exc:
            if exist_ok and exc.status == 409:
                return {}
            raise

    def delete(self, obj: Mapping[str, Any]) -> None:
        url = f"{self.path(obj)}/{obj['metadata']['name']}?gracePeriodSeconds=0"
        try:
            self.api.request("DELETE", url)
        except ApiError as exc:
            if exc.status != 404:
                raise

    def delete_pods(self, namespace: str) -> None:
        try:
            self.api.request("DELETE", f"/api/v1/namespaces/{namespace}/pods?gracePeriodSeconds=0")
        except ApiError as exc:
            if exc.status != 404:
                raise

    def nodes(self) -> list[JSON]:
        items: list[JSON] = self.api.get("/api/v1/nodes")["items"]
        return items

    def bound_pods(self) -> list[JSON]:
        items: list[JSON] = self.api.get("/api/v1/pods?fieldSelector=spec.nodeName!%3D")["items"]
        return items

    def get(self, obj: Mapping[str, Any]) -> JSON:
        return self.api.get(f"{self.path(obj)}/{obj['metadata']['name']}")

    def pods(self, namespace: str) -> list[JSON]:
        items: list[JSON] = self.api.get(f"/api/v1/namespaces/{namespace}/pods")["items"]
        return items

    def storage(self) -> list[JSON]:
        """Every StorageClass, PV, CSINode and claim, each with its kind set."""
        out: list[JSON] = []
        for kind, path in STORAGE_LISTS.items():
            for item in self.api.get(path)["items"]:
                out.append({**item, "kind": kind})
        return out

    def dra_objects(self) -> list[JSON]:
        """Every DeviceClass, ResourceSlice and ResourceClaim (claims with their status)."""
        out: list[JSON] = []
        for kind, path in (
            ("DeviceClass", _COLLECTIONS["DeviceClass"]),
            ("ResourceSlice", _COLLECTIONS["ResourceSlice"]),
            ("ResourceClaim", "/apis/resource.k8s.io/v1/resourceclaims"),
        ):
            out.extend({**item, "kind": kind} for item in self.api.get(path)["items"])
        return out

    def release_claim(self, claim: Mapping[str, Any]) -> None:
        """Delete a claim now: drop the finalizer kube-scheduler added on allocation, so the
        next scenario never waits for (or sees) the resource-claim controller's cleanup."""
        self.delete(claim)
        try:
            current = self.get(claim)
            if current["metadata"].get("finalizers"):
                current["metadata"]["finalizers"] = []
                self.api.request("PUT", f"{self.path(claim)}/{claim['metadata']['name']}", current)
        except ApiError as exc:
            if exc.status not in (404, 409):
                raise

    def namespace_labels(self) -> dict[str, dict[str, str]]:
        return {
            ns["metadata"]["name"]: dict(ns["metadata"].get("labels") or {})
            for ns in self.api.get("/api/v1/namespaces")["items"]
        }
