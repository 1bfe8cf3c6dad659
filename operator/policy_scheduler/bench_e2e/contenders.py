"""The three contenders, each a child process started after its pods exist.

- noop: `noop_binder`, binds round-robin without deciding anything: the API server's ceiling;
- kube-scheduler: the binary of the dev-cluster build (the selected Kubernetes version, see
  devcluster/versions.py), default profile, client QPS raised as scheduler_perf does;
- policy-scheduler: `policy-scheduler run` serving one SchedulingProfile with the defaults.
"""

from __future__ import annotations

import compileall
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

import policy_scheduler
from policy_scheduler.bench_e2e.api import Client
from policy_scheduler.bench_e2e.workloads import MEASURED, ROLE_LABEL
from policy_scheduler.devcluster.hostnet import LOOPBACK, free_ports
from policy_scheduler.devcluster.versions import bin_dir

NOOP, KUBE, POLICY = "noop", "kube-scheduler", "policy-scheduler"
# The no-op binder that also writes the Scheduled event of each pod, as both schedulers do: the
# ceiling of a scheduler that reports its binds. Only when asked for.
NOOP_EVENTS = "noop-events"
ALL = (NOOP, NOOP_EVENTS, KUBE, POLICY)
DEFAULT = (NOOP, KUBE, POLICY)
# scheduler_perf raises the client's rate limits so that they never throttle the scheduler.
CLIENT_QPS = 5000
CLIENT_BURST = 5000
PROFILE_LABEL = "bench-e2e/profile"
PROFILES = "/apis/scheduling.policy-scheduler.io/v1alpha1/schedulingprofiles"


@dataclass(frozen=True)
class Launch:
    argv: list[str]
    env: dict[str, str] | None = None


def kube_scheduler_config(kubeconfig: Path, scheduler_name: str) -> dict[str, Any]:
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": str(kubeconfig), "qps": CLIENT_QPS, "burst": CLIENT_BURST},
        "leaderElection": {"leaderElect": False},
        "profiles": [{"schedulerName": scheduler_name}],
    }


def profile(scheduler_name: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """kube-scheduler's default profile under `scheduler_name` (no plugins: the defaults), plus
    what the workload needs (`extra` spec fields: Coscheduling for the gang workloads)."""
    return {
        "apiVersion": "scheduling.policy-scheduler.io/v1alpha1",
        "kind": "SchedulingProfile",
        "metadata": {"name": scheduler_name, "labels": {PROFILE_LABEL: scheduler_name}},
        "spec": {"schedulerName": scheduler_name, **(extra or {})},
    }


def precompile() -> None:
    """Byte-compile our package, as installing the wheel does (the image has its .pyc files).

    A source checkout run with PYTHONDONTWRITEBYTECODE=1 (the image's setting, and common in dev
    shells) otherwise compiles every module from source at each start: ~0.6 CPU-s of "start-up"
    that no installed scheduler pays. Up-to-date files are skipped, so repeated calls are cheap.
    """
    compileall.compile_dir(Path(policy_scheduler.__file__).parent, quiet=1)


def launch(contender: str, kubeconfig: Path, scheduler_name: str, workdir: Path) -> Launch:
    if contender in (NOOP, NOOP_EVENTS):
        return Launch(
            [
                sys.executable,
                "-m",
                "policy_scheduler.bench_e2e.noop_binder",
                f"--kubeconfig={kubeconfig}",
                f"--scheduler-name={scheduler_name}",
                f"--selector={ROLE_LABEL}={MEASURED}",  # never the pods meant to stay pending
                *(["--events"] if contender == NOOP_EVENTS else []),
            ]
        )
    if contender == KUBE:
        config = workdir / f"{scheduler_name}.yaml"
        config.write_text(yaml.safe_dump(kube_scheduler_config(kubeconfig, scheduler_name), sort_keys=False))
        port = free_ports(1)[0]
        binary = bin_dir() / "kube-scheduler"
        return Launch(
            [str(binary), f"--config={config}", f"--bind-address={LOOPBACK}", f"--secure-port={port}"]
        )
    if contender == POLICY:
        precompile()
        return Launch(
            [
                sys.executable,
                "-m",
                "policy_scheduler",
                # INFO shows the start-up steps' times in the log (listed, running)
                f"--log-level={os.environ.get('BENCH_E2E_LOG_LEVEL', 'WARNING')}",
                "run",
                f"--kubeconfig={kubeconfig}",
                "--no-leader-elect",
                "--secure-port=0",
                f"--profile-selector={PROFILE_LABEL}={scheduler_name}",
                # kube-scheduler's event writes go through its client at CLIENT_QPS: ours alike,
                # so that both write every Scheduled event during the run.
                f"--event-qps={CLIENT_QPS}",
                f"--event-burst={CLIENT_BURST}",
            ]
        )
    raise ValueError(f"unknown contender {contender!r}; known: {', '.join(ALL)}")


async def prepare(
    contender: str, client: Client, scheduler_name: str, extra: dict[str, Any] | None = None
) -> None:
    if contender == POLICY:
        await client.create(PROFILES, profile(scheduler_name, extra), exist_ok=True)


async def cleanup(contender: str, client: Client, scheduler_name: str) -> None:
    if contender == POLICY:
        await client.delete(f"{PROFILES}/{scheduler_name}")
