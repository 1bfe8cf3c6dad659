"""Storage-aware scheduling on the real control plane (issue 10): the operator's storage
informers and VolumeBinding writes, with kube-controller-manager's PV binder completing the
bindings.

Each test has its own namespace, profile/schedulerName and tainted kwok nodes that only its pods
tolerate. Orderings are checked by resourceVersion (one etcd: a global order) seen by watches.
"""

from __future__ import annotations

import functools
import json
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from kubectl import Kubectl, condition, namespace, pod, profile
from policy_scheduler.devcluster.cluster import DevCluster
from polling import wait_until

NODE_LABEL = "e2e-storage"
HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
SELECTED_NODE = "volume.kubernetes.io/selected-node"
CSI_DRIVER = "e2e.csi.example.com"
# The unschedulable flush retries every pod after 5 minutes: a queueing hint must be far quicker.
WELL_BEFORE_FLUSH = 60.0


class Watch:
    """`kubectl get -w` of one kind in a namespace: (resourceVersion, fields) per event."""

    def __init__(self, kubectl: Kubectl, kind: str, ns: str | None, template: str) -> None:
        args = [kubectl.binary, "--kubeconfig", str(kubectl.kubeconfig), "get", kind, "-w"]
        args += ["-n", ns] if ns else []
        args += ["-o", "jsonpath={.metadata.name}|{.metadata.resourceVersion}|" + template + "{'\\n'}"]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
        self.events: list[tuple[int, str, list[str]]] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            name, rv, *fields = line.rstrip("\n").split("|")
            if rv.isdigit():
                self.events.append((int(rv), name, fields))

    def first(self, name: str, pred: Callable[[list[str]], bool]) -> int | None:
        return next((rv for rv, n, fields in list(self.events) if n == name and pred(fields)), None)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


class Scene:
    def __init__(self, kubectl: Kubectl, cluster: DevCluster, tag: str) -> None:
        self.kubectl = kubectl
        self.cluster = cluster
        self.tag = tag
        self.ns = f"e2e-storage-{tag}"
        self.scheduler = f"storage-{tag}"
        self.name = f"e2e-storage-{tag}"
        self.cluster_objects: list[tuple[str, str]] = []
        self.nodes: list[str] = []
        kubectl.apply(namespace(self.ns))
        kubectl.apply(profile(self.name, self.scheduler))
        wait_until(f"profile {self.name} ready", self._ready, timeout=30)

    def _ready(self) -> bool:
        cond = condition(self.kubectl.get("schedulingprofile", self.name), "Ready")
        return bool(cond and cond["status"] == "True")

    def add_nodes(self, count: int, zones: tuple[str, ...] = ("zone-a",)) -> list[str]:
        names = self.cluster.create_nodes(
            count, prefix=f"st-{self.tag}", cpu="8", memory="16Gi", labels={NODE_LABEL: self.tag}, zones=zones
        )
        for name in names:
            self.kubectl.run("taint", "nodes", name, f"{NODE_LABEL}={self.tag}:NoSchedule", "--overwrite")
        self.nodes += names
        return names

    def pod(self, name: str, *claims: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "tolerations": [
                {"key": NODE_LABEL, "operator": "Equal", "value": self.tag, "effect": "NoSchedule"}
            ],
            "volumes": [
                {"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claims)
            ],
            **(extra or {}),
        }
        # Only this test's nodes (the session's untainted nodes would take them too).
        spec["nodeSelector"] = {NODE_LABEL: self.tag, **spec.get("nodeSelector", {})}
        return pod(name, self.ns, self.scheduler, extra_spec=spec)

    def cluster_scoped(self, *objects: dict[str, Any]) -> None:
        self.kubectl.apply(*objects)
        self.cluster_objects += [(o["kind"].lower(), o["metadata"]["name"]) for o in objects]

    def storage_class(self, name: str, mode: str, provisioner: str = "kubernetes.io/no-provisioner") -> str:
        full = f"{self.name}-{name}"
        self.cluster_scoped(
            {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "StorageClass",
                "metadata": {"name": full},
                "provisioner": provisioner,
                "volumeBindingMode": mode,
            }
        )
        return full

    def pv(
        self,
        name: str,
        storage_class: str,
        *,
        node: str | None = None,
        zone: str | None = None,
        claim: dict[str, Any] | None = None,
        csi: bool = False,
    ) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "storageClassName": storage_class,
            "capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"],
        }
        labels: dict[str, str] = {}
        if csi:
            spec["csi"] = {"driver": CSI_DRIVER, "volumeHandle": name}
        else:
            spec["hostPath"] = {"path": f"/mnt/{name}"}
        if node is not None:
            spec["nodeAffinity"] = _affinity(HOSTNAME, node)
        if zone is not None:
            spec["nodeAffinity"] = _affinity(ZONE, zone)
            labels[ZONE] = zone
        if claim is not None:
            meta = claim["metadata"]
            spec["claimRef"] = {
                "namespace": meta["namespace"],
                "name": meta["name"],
                "uid": meta.get("uid", ""),
            }
            if not spec["claimRef"]["uid"]:
                del spec["claimRef"]["uid"]
        return {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": f"{self.name}-{name}", "labels": labels},
            "spec": spec,
        }

    def claim(self, name: str, storage_class: str, volume_name: str = "") -> dict[str, Any]:
        spec: dict[str, Any] = {
            "storageClassName": storage_class,
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}},
        }
        if volume_name:
            spec["volumeName"] = volume_name
        return {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": self.ns},
            "spec": spec,
        }

    def node_of(self, name: str) -> str | None:
        return self.kubectl.get("pod", name, self.ns)["spec"].get("nodeName") or None

    def pending_message(self, name: str) -> str | None:
        cond = condition(self.kubectl.get("pod", name, self.ns), "PodScheduled")
        return str(cond["message"]) if cond and cond["status"] == "False" and cond.get("message") else None

    def cleanup(self) -> None:
        self.kubectl.delete("namespace", self.ns)
        self.kubectl.delete("schedulingprofile", self.name)
        for kind, name in self.cluster_objects:
            self.kubectl.delete(kind, name)
        for node in self.nodes:
            self.kubectl.delete("node", node)


def _affinity(key: str, value: str) -> dict[str, Any]:
    term = {"matchExpressions": [{"key": key, "operator": "In", "values": [value]}]}
    return {"required": {"nodeSelectorTerms": [term]}}


@pytest.fixture
def scene(
    operator_process: Any, kubectl: Kubectl, dev_cluster: DevCluster
) -> Iterator[Callable[[str], Scene]]:
    scenes: list[Scene] = []

    def make(tag: str) -> Scene:
        scenes.append(Scene(kubectl, dev_cluster, tag))
        return scenes[-1]

    yield make
    for s in scenes:
        s.cleanup()


PVC_TEMPLATE = "{.spec.volumeName}|{.metadata.annotations.pv\\.kubernetes\\.io/bind-completed}"


def test_statefulset_replicas_land_on_their_local_pvs_after_the_claims_bind(
    scene: Callable[[str], Scene], kubectl: Kubectl
) -> None:
    s = scene("sts")
    nodes = s.add_nodes(3)
    local = s.storage_class("local", "WaitForFirstConsumer")
    s.cluster_scoped(*(s.pv(f"pv-{i}", local, node=node) for i, node in enumerate(nodes)))
    pods = Watch(kubectl, "pods", s.ns, "{.spec.nodeName}")
    claims = Watch(kubectl, "pvc", s.ns, PVC_TEMPLATE)
    try:
        template = s.pod("x")
        template["spec"]["volumes"] = []
        template["spec"]["containers"][0]["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
        kubectl.apply(
            {
                "apiVersion": "apps/v1",
                "kind": "StatefulSet",
                "metadata": {"name": "db", "namespace": s.ns},
                "spec": {
                    "replicas": 3,
                    "podManagementPolicy": "Parallel",
                    "serviceName": "db",
                    "selector": {"matchLabels": {"app": "db"}},
                    "template": {"metadata": {"labels": {"app": "db"}}, "spec": template["spec"]},
                    "volumeClaimTemplates": [
                        {
                            "metadata": {"name": "data"},
                            "spec": {
                                "storageClassName": local,
                                "accessModes": ["ReadWriteOnce"],
                                "resources": {"requests": {"storage": "1Gi"}},
                            },
                        }
                    ],
                },
            }
        )
        names = [f"db-{i}" for i in range(3)]

        def all_bound() -> bool:
            bound = [p for p in kubectl.items("pods", s.ns) if p["spec"].get("nodeName")]
            return len(bound) == 3

        wait_until("3 replicas bound", all_bound, timeout=90)
        pv_node = {f"{s.name}-pv-{i}": node for i, node in enumerate(nodes)}
        used = set()
        for name in names:
            claim = kubectl.get("pvc", f"data-{name}", s.ns)
            volume = claim["spec"]["volumeName"]
            assert claim["status"]["phase"] == "Bound"
            assert s.node_of(name) == pv_node[volume], f"{name} is not on the node of its PV {volume}"
            used.add(volume)
            # No pod is bound before its claim is fully bound (volumeName and bind-completed).
            claim_rv = wait_until(
                f"claim data-{name} bound in the watch",
                functools.partial(claims.first, f"data-{name}", lambda f: bool(f[0]) and bool(f[1])),
                timeout=10,
            )
            pod_rv = wait_until(
                f"{name} bound in the watch",
                functools.partial(pods.first, name, lambda f: bool(f[0])),
                timeout=10,
            )
            assert claim_rv < pod_rv, f"{name} was bound (rv {pod_rv}) before its claim (rv {claim_rv})"
        assert len(used) == 3
    finally:
        pods.stop()
        claims.stop()


def test_dynamic_provisioning_binds_the_pod_after_the_pv(
    scene: Callable[[str], Scene], kubectl: Kubectl
) -> None:
    s = scene("dyn")
    nodes = s.add_nodes(2)
    fast = s.storage_class("fast", "WaitForFirstConsumer", provisioner="e2e.example.com/fake")
    stop = threading.Event()
    provisioned: dict[str, tuple[str, int]] = {}  # claim -> (node, PV resourceVersion)

    def provisioner() -> None:
        """A test-only external provisioner: a PV on the selected node for each claim asking."""
        while not stop.is_set():
            for claim in kubectl.items("pvc", s.ns):
                meta = claim["metadata"]
                node = (meta.get("annotations") or {}).get(SELECTED_NODE)
                if not node or claim["spec"].get("volumeName") or meta["name"] in provisioned:
                    continue
                pv = s.pv(f"prov-{meta['name']}", fast, node=node, claim=claim)
                out = kubectl.run(
                    "create", "-f", "-", "-o", "jsonpath={.metadata.resourceVersion}", stdin=json.dumps(pv)
                )
                s.cluster_objects.append(("persistentvolume", pv["metadata"]["name"]))
                provisioned[meta["name"]] = (node, int(out.stdout))
            time.sleep(0.3)

    thread = threading.Thread(target=provisioner, daemon=True)
    thread.start()
    pods = Watch(kubectl, "pods", s.ns, "{.spec.nodeName}")
    try:
        kubectl.apply(s.claim("scratch", fast), s.pod("builder", "scratch"))
        node = wait_until("builder bound", lambda: s.node_of("builder"), timeout=60)
        assert node in nodes
        assert provisioned["scratch"][0] == node
        pod_rv = wait_until(
            "builder bound in the watch", lambda: pods.first("builder", lambda f: bool(f[0])), timeout=10
        )
        assert provisioned["scratch"][1] < pod_rv, "the pod was bound before its PV existed"
        claim = kubectl.get("pvc", "scratch", s.ns)
        assert claim["spec"]["volumeName"] == f"{s.name}-prov-scratch"
        assert claim["metadata"]["annotations"][BIND_COMPLETED] == "yes"
    finally:
        stop.set()
        thread.join(timeout=5)
        pods.stop()


def test_missing_and_unbound_immediate_claims_wait_then_schedule_on_the_event(
    scene: Callable[[str], Scene], kubectl: Kubectl
) -> None:
    s = scene("wait")
    (node,) = s.add_nodes(1)
    local = s.storage_class("local", "WaitForFirstConsumer")
    immediate = s.storage_class("imm", "Immediate", provisioner="e2e.example.com/none")
    kubectl.apply(
        s.claim("later-claim-0", immediate), s.pod("orphan", "nowhere"), s.pod("waiter", "later-claim-0")
    )
    orphan = wait_until("orphan's reason", lambda: s.pending_message("orphan"), timeout=30)
    assert 'persistentvolumeclaim "nowhere" not found' in orphan
    waiter = wait_until("waiter's reason", lambda: s.pending_message("waiter"), timeout=30)
    assert "pod has unbound immediate PersistentVolumeClaims" in waiter

    # The claim appears (with a PV for it on the node): the pod is retried on that event.
    started = time.monotonic()
    s.cluster_scoped(s.pv("for-orphan", local, node=node))
    kubectl.apply(s.claim("nowhere", local))
    assert wait_until("orphan bound", lambda: s.node_of("orphan"), timeout=WELL_BEFORE_FLUSH) == node
    # The PV controller binds the Immediate claim to a PV pre-bound to it: the claim update requeues.
    claim = kubectl.get("pvc", "later-claim-0", s.ns)
    s.cluster_scoped(s.pv("for-waiter", immediate, claim=claim))
    assert wait_until("waiter bound", lambda: s.node_of("waiter"), timeout=WELL_BEFORE_FLUSH) == node
    assert time.monotonic() - started < WELL_BEFORE_FLUSH


def test_zonal_pv_steers_the_pod_and_csi_node_limit_keeps_a_third_volume_off(
    scene: Callable[[str], Scene], kubectl: Kubectl
) -> None:
    s = scene("zone")
    nodes = s.add_nodes(2, zones=("zone-a", "zone-b"))
    zone_b = nodes[1]
    claim = s.claim("zonal", "", volume_name=f"{s.name}-zonal")
    s.cluster_scoped(s.pv("zonal", "", zone="zone-b", claim=claim))
    kubectl.apply(claim, s.pod("zonal-pod", "zonal"))
    assert wait_until("zonal pod bound", lambda: s.node_of("zonal-pod"), timeout=60) == zone_b

    # Two volumes of the driver fit zone-a's node (CSINode allocatable count 2); a third does not.
    limited = nodes[0]
    s.cluster_scoped(
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSINode",
            "metadata": {"name": limited},
            "spec": {"drivers": [{"name": CSI_DRIVER, "nodeID": limited, "allocatable": {"count": 2}}]},
        }
    )
    pin = {"nodeSelector": {HOSTNAME: limited}}
    for i in range(3):
        claim = s.claim(f"csi-{i}", "", volume_name=f"{s.name}-csi-{i}")
        s.cluster_scoped(s.pv(f"csi-{i}", "", claim=claim, csi=True))
        kubectl.apply(claim)

    def claims_bound() -> bool:
        phases = [(kubectl.get("pvc", f"csi-{i}", s.ns).get("status") or {}).get("phase") for i in range(3)]
        return phases == ["Bound"] * 3

    wait_until("the PV controller to bind the CSI claims", claims_bound, timeout=60)
    for i in range(2):
        kubectl.apply(s.pod(f"csi-pod-{i}", f"csi-{i}", extra=pin))
        assert (
            wait_until(f"csi-pod-{i} bound", functools.partial(s.node_of, f"csi-pod-{i}"), timeout=60)
            == limited
        )
    kubectl.apply(s.pod("csi-pod-2", "csi-2", extra=pin))
    message = wait_until("csi-pod-2's reason", lambda: s.pending_message("csi-pod-2"), timeout=30)
    assert "node(s) exceed max volume count" in message
    assert s.node_of("csi-pod-2") is None
