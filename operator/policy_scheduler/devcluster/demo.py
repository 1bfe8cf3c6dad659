"""`policy-scheduler demo`: the main job in one command.

Builds the control plane if needed, starts it with kwok nodes, runs the operator (a real
`policy-scheduler run` process), applies two SchedulingProfiles and a small workload, and
prints where every pod went and why the others did not.
"""

from __future__ import annotations

import argparse
import json
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from policy_scheduler.devcluster.build import build_all
from policy_scheduler.devcluster.cluster import DevCluster
from policy_scheduler.policy.constants import GROUP, VERSION

NAMESPACE = "demo"


def _profile(name: str, scheduler: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "SchedulingProfile",
        "metadata": {"name": name},
        "spec": {"schedulerName": scheduler, **spec},
    }


def _pod(name: str, scheduler: str, cpu: str, app: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"app": app}},
        "spec": {
            "schedulerName": scheduler,
            "terminationGracePeriodSeconds": 0,
            "containers": [
                {
                    "name": "app",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}},
                }
            ],
        },
    }


def demo_objects() -> list[dict[str, Any]]:
    bin_packing = {
        "pluginConfig": [
            {
                "name": "NodeResourcesFit",
                "args": {
                    "scoringStrategy": {
                        "type": "MostAllocated",
                        "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}],
                    }
                },
            }
        ]
    }
    objects: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        _profile("spread", "policy-scheduler"),
        _profile("bin-packing", "bin-packer", **bin_packing),
    ]
    objects += [_pod(f"web-{i}", "policy-scheduler", "1", "web") for i in range(6)]
    objects += [_pod(f"batch-{i}", "bin-packer", "1", "batch") for i in range(6)]
    objects.append(_pod("too-big", "policy-scheduler", "64", "huge"))
    return objects


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _Kubectl:
    def __init__(self, cluster: DevCluster) -> None:
        self.base = [str(cluster.kubectl), "--kubeconfig", str(cluster.kubeconfig)]

    def apply(self, objects: list[dict[str, Any]]) -> None:
        body = json.dumps({"apiVersion": "v1", "kind": "List", "items": objects})
        subprocess.run(
            [*self.base, "apply", "-f", "-"], input=body, text=True, check=True, capture_output=True
        )

    def items(self, *args: str) -> list[dict[str, Any]]:
        out = subprocess.run(
            [*self.base, "get", *args, "-o", "json"], text=True, check=True, capture_output=True
        ).stdout
        items: list[dict[str, Any]] = json.loads(out)["items"]
        return items


def _wait_ready(port: int, operator: subprocess.Popen[bytes], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if operator.poll() is not None:
            raise RuntimeError(f"the operator exited with code {operator.returncode}")
        # /readyz needs no credentials; the certificate is the operator's self-signed one.
        unverified = ssl.create_default_context()
        unverified.check_hostname = False
        unverified.verify_mode = ssl.CERT_NONE
        try:
            with urllib.request.urlopen(
                f"https://127.0.0.1:{port}/readyz", timeout=2, context=unverified
            ) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.3)
    raise RuntimeError("the operator did not become ready in time")


def _settled(pods: list[dict[str, Any]], expected: int) -> bool:
    if len(pods) < expected:
        return False
    for p in pods:
        scheduled = any(
            c.get("type") == "PodScheduled" for c in (p.get("status") or {}).get("conditions") or []
        )
        if not p["spec"].get("nodeName") and not scheduled:
            return False
    return True


def _reported(kubectl: _Kubectl) -> int:
    profiles = kubectl.items(f"schedulingprofiles.{GROUP}")
    return sum(int((p.get("status") or {}).get("scheduled") or 0) for p in profiles)


def placement_table(pods: list[dict[str, Any]], nodes: list[dict[str, Any]]) -> str:
    cpu_of = {n["metadata"]["name"]: n["status"]["allocatable"]["cpu"] for n in nodes}
    rows = [("POD", "SCHEDULER", "NODE", "NODE CPU", "WHY PENDING")]
    for p in sorted(pods, key=lambda p: (p["spec"]["schedulerName"], p["metadata"]["name"])):
        node = p["spec"].get("nodeName") or ""
        why = ""
        if not node:
            for c in (p.get("status") or {}).get("conditions") or []:
                if c.get("type") == "PodScheduled":
                    why = f"{c.get('reason')}: {c.get('message')}"
        rows.append(
            (
                p["metadata"]["name"],
                p["spec"]["schedulerName"],
                node or "<pending>",
                cpu_of.get(node, ""),
                why,
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    return "\n".join(
        ("  ".join(r[i].ljust(widths[i]) for i in range(4)) + "  " + r[4]).rstrip() for r in rows
    )


def run_demo(args: argparse.Namespace) -> int:
    build_all()
    workdir = Path(tempfile.mkdtemp(prefix="policy-scheduler-demo-"))
    print(f"starting a local control plane with {args.nodes} kwok nodes in {workdir} ...", flush=True)
    cluster = DevCluster(workdir, nodes=0, die_with_parent=not args.keep)
    cluster.start()
    operator: subprocess.Popen[bytes] | None = None
    try:
        half = max(1, args.nodes // 2)
        cluster.create_nodes(half, prefix="small", cpu="4", memory="16Gi")
        cluster.create_nodes(max(1, args.nodes - half), prefix="large", cpu="16", memory="64Gi")
        port = _free_port()
        log_path = workdir / "operator.log"
        print(f"starting the operator (log: {log_path}) ...", flush=True)
        with log_path.open("w") as log:
            operator = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "policy_scheduler",
                    "run",
                    "--kubeconfig",
                    str(cluster.kubeconfig),
                    "--install-crds",
                    "--no-leader-elect",
                    "--bind-address",
                    "127.0.0.1",
                    "--secure-port",
                    str(port),
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        _wait_ready(port, operator)
        kubectl = _Kubectl(cluster)
        objects = demo_objects()
        kubectl.apply(objects)
        expected = sum(1 for o in objects if o["kind"] == "Pod")
        deadline = time.monotonic() + 60
        pods = kubectl.items("pods", "-n", NAMESPACE)
        while not _settled(pods, expected) and time.monotonic() < deadline:
            time.sleep(0.5)
            pods = kubectl.items("pods", "-n", NAMESPACE)
        # Status is written in batches every few seconds: wait until it reports these pods.
        scheduled = sum(1 for p in pods if p["spec"].get("nodeName"))
        while time.monotonic() < deadline and _reported(kubectl) < scheduled:
            time.sleep(0.5)
        print()
        print("profiles: 'spread' (schedulerName policy-scheduler, kube-scheduler's default plugins)")
        print("          'bin-packing' (schedulerName bin-packer, NodeResourcesFit MostAllocated)")
        print()
        print(placement_table(pods, kubectl.items("nodes")))
        print()
        for profile in kubectl.items(f"schedulingprofiles.{GROUP}"):
            status = profile.get("status") or {}
            ready: dict[str, Any] = next(
                (c for c in status.get("conditions", []) if c.get("type") == "Ready"), {}
            )
            print(
                f"SchedulingProfile {profile['metadata']['name']}: Ready={ready.get('status')} "
                f"scheduled={status.get('scheduled')} pending={status.get('pending')}"
            )
        if args.keep:
            print(f"\nleft running. export KUBECONFIG={cluster.kubeconfig}; operator pid {operator.pid}")
            cluster.detach()
            operator = None
        return 0 if _settled(pods, expected) else 1
    finally:
        if operator is not None:
            operator.terminate()
            operator.wait(timeout=15)
        if not args.keep:
            cluster.stop()
