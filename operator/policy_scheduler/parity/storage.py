"""Storage in parity scenarios: StorageClasses, PVs, claims and CSINodes, and the claims pods use.

About a third of the scenarios get storage. Claims cover what the volume plugins decide on:
WaitForFirstConsumer claims matched against local PVs (hostname node affinity) and zonal PVs
(zone node affinity and label), claims bound ahead of time (the PV controller completes them
before any pod is judged), missing claims, unbound Immediate claims, ReadWriteOncePod claims
shared by two pods, and CSI volumes counted against CSINode limits. A separate random stream
keeps the rest of each scenario as it was without storage.
"""

from __future__ import annotations

import random
from typing import Any

from policy_scheduler.parity import podspec as ps
from policy_scheduler.parity.podspec import chance, pick

CSI_DRIVER = "parity.csi.example.com"
NO_PROVISIONER = "kubernetes.io/no-provisioner"
RWO, RWOP = "ReadWriteOnce", "ReadWriteOncePod"
CLUSTER_SCOPED = ("StorageClass", "PersistentVolume", "CSINode")
_SALT = 0x5707A6E


def _class(name: str, mode: str) -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": NO_PROVISIONER,
        "volumeBindingMode": mode,
    }


def _affinity(key: str, value: str) -> dict[str, Any]:
    term = {"matchExpressions": [{"key": key, "operator": "In", "values": [value]}]}
    return {"required": {"nodeSelectorTerms": [term]}}


class _Builder:
    def __init__(self, rng: random.Random, prefix: str, nodes: list[dict[str, Any]]) -> None:
        self.rng = rng
        self.prefix = prefix
        self.nodes = nodes
        self.local = f"{prefix}local"
        self.immediate = f"{prefix}imm"
        self.objects: list[dict[str, Any]] = [
            _class(self.local, "WaitForFirstConsumer"),
            _class(self.immediate, "Immediate"),
        ]
        self.claims: list[tuple[str, str]] = []  # (namespace, name) of every claim made
        self.count = 0

    def _name(self, kind: str) -> str:
        self.count += 1
        return f"{self.prefix}{kind}{self.count}" if kind == "pv" else f"{kind}{self.count}"

    def _pv(self, storage_class: str, modes: list[str], *, csi: bool = False) -> dict[str, Any]:
        rng = self.rng
        name = self._name("pv")
        spec: dict[str, Any] = {
            "storageClassName": storage_class,
            "capacity": {"storage": pick(rng, "1Gi", "5Gi", "10Gi")},
            "accessModes": modes,
        }
        labels: dict[str, str] = {}
        if csi:
            spec["csi"] = {"driver": CSI_DRIVER, "volumeHandle": name}
        else:
            spec["hostPath"] = {"path": f"/mnt/{name}"}
            node = pick(rng, *self.nodes)
            zone = node["metadata"]["labels"].get(ps.ZONE)
            if zone and chance(rng, 0.3):
                spec["nodeAffinity"] = _affinity(ps.ZONE, zone)
                labels[ps.ZONE] = zone
            else:
                spec["nodeAffinity"] = _affinity(ps.HOSTNAME, node["metadata"]["name"])
        return {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": name, "labels": labels},
            "spec": spec,
        }

    def _claim(self, namespace: str, storage_class: str, modes: list[str], volume: str = "") -> str:
        name = self._name("c")
        # A claim bound ahead of time asks for no more than its PV has (the PV controller checks).
        size = "1Gi" if volume else pick(self.rng, "1Gi", "1Gi", "4Gi", "8Gi")
        spec: dict[str, Any] = {
            "storageClassName": storage_class,
            "accessModes": modes,
            "resources": {"requests": {"storage": size}},
        }
        if volume:
            spec["volumeName"] = volume
        self.objects.append(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": name, "namespace": namespace},
                "spec": spec,
            }
        )
        self.claims.append((namespace, name))
        return name

    def _bound(self, namespace: str, *, csi: bool) -> str:
        modes = [RWOP] if chance(self.rng, 0.25) else [RWO]
        pv = self._pv("", modes, csi=csi)
        claim = self._claim(namespace, "", modes, volume=pv["metadata"]["name"])
        pv["spec"]["claimRef"] = {"namespace": namespace, "name": claim}
        self.objects.append(pv)
        return claim

    def available_pvs(self) -> None:
        for _ in range(self.rng.randint(0, 5)):
            modes = [RWOP] if chance(self.rng, 0.25) else [RWO]  # RWOP may not be combined
            self.objects.append(self._pv(self.local, modes))

    def csi_nodes(self) -> None:
        for node in self.nodes:
            if chance(self.rng, 0.4):
                name = node["metadata"]["name"]
                driver = {
                    "name": CSI_DRIVER,
                    "nodeID": name,
                    "allocatable": {"count": pick(self.rng, 1, 2, 3)},
                }
                self.objects.append(
                    {
                        "apiVersion": "storage.k8s.io/v1",
                        "kind": "CSINode",
                        "metadata": {"name": name},
                        "spec": {"drivers": [driver]},
                    }
                )

    def claim_for(self, namespace: str, *, pending: bool) -> str:
        rng = self.rng
        shared = [name for ns, name in self.claims if ns == namespace]
        kind = pick(
            rng, *(["wffc"] * 8 + ["bound"] * 4 + ["csi"] * 3 + ["shared"] * 3 + ["missing", "immediate"])
        )
        if not pending and kind in ("wffc", "missing", "immediate"):
            kind = "csi"  # a running pod's claims are bound
        if kind == "shared" and shared:
            return str(pick(rng, *shared))
        if kind == "missing":
            return self._name("missing")
        if kind == "immediate":
            return self._claim(namespace, self.immediate, [RWO])
        if kind in ("bound", "csi", "shared"):
            return self._bound(namespace, csi=kind != "bound")
        return self._claim(namespace, self.local, [RWOP] if chance(rng, 0.15) else [RWO])


def add_storage(
    seed: int, prefix: str, nodes: list[dict[str, Any]], running: list[Any], pending: list[Any]
) -> list[Any]:
    """Storage objects for the scenario (or none), adding claims to some of its pods."""
    rng = random.Random(seed ^ _SALT)
    if not chance(rng, 0.35):
        return []
    build = _Builder(rng, prefix, nodes)
    build.available_pvs()
    build.csi_nodes()
    for pods, is_pending, p in ((running, False, 0.3), (pending, True, 0.6)):
        for pod in pods:
            if not chance(rng, p):
                continue
            namespace = pod["metadata"]["namespace"]
            claims = [build.claim_for(namespace, pending=is_pending) for _ in range(pick(rng, 1, 1, 1, 2))]
            pod["spec"]["volumes"] = [
                {"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}}
                for i, c in enumerate(dict.fromkeys(claims))
            ]
    return build.objects
