"""The reference: kube-scheduler of the selected version as a child process, all parity
profiles, verbose log."""

from __future__ import annotations

import time
from pathlib import Path
from types import TracebackType

import yaml

from policy_scheduler.devcluster.hostnet import LOOPBACK, free_ports
from policy_scheduler.devcluster.kubeapi import probe
from policy_scheduler.devcluster.procs import Component, log_tail, spawn, terminate
from policy_scheduler.devcluster.versions import ControlPlaneVersions, bin_dir, control_plane
from policy_scheduler.parity.profiles import kube_scheduler_config
from policy_scheduler.parity.schedlog import SchedulerLog

VMODULE = "schedule_one=10,eventhandlers=4,scheduling_queue=4"


class ReferenceError(RuntimeError):
    """kube-scheduler did not start or died."""


class KubeScheduler:
    def __init__(self, kubeconfig: Path, workdir: Path, versions: ControlPlaneVersions | None = None) -> None:
        """`versions`: whose kube-scheduler (default: the selected version, see `control_plane`)."""
        self.kubeconfig = kubeconfig
        self.workdir = workdir
        self.versions = versions or control_plane()
        self.binary = bin_dir(self.versions) / "kube-scheduler"
        self.component: Component | None = None
        self.log: SchedulerLog | None = None

    @property
    def log_path(self) -> Path:
        return self.workdir / "kube-scheduler.log"

    def start(self, timeout: float = 60.0) -> SchedulerLog:
        if not self.binary.is_file():
            raise ReferenceError(
                f"{self.binary} is missing; build it with "
                f"`policy-scheduler dev-cluster build --kubernetes-version {self.versions.kubernetes}`"
            )
        self.workdir.mkdir(parents=True, exist_ok=True)
        config = self.workdir / "kube-scheduler-config.yaml"
        config.write_text(yaml.safe_dump(kube_scheduler_config(str(self.kubeconfig)), sort_keys=False))
        self.log_path.unlink(missing_ok=True)
        port = free_ports(1)[0]
        argv = [
            str(self.binary),
            f"--config={config}",
            f"--bind-address={LOOPBACK}",
            f"--secure-port={port}",
            "-v=2",
            f"--vmodule={VMODULE}",
        ]
        self.component = spawn("kube-scheduler", argv, self.log_path)
        deadline = time.monotonic() + timeout
        while not probe(f"https://{LOOPBACK}:{port}/readyz"):
            if not self.component.alive() or time.monotonic() > deadline:
                self.stop()
                raise ReferenceError(f"kube-scheduler did not become ready:\n{log_tail(self.log_path)}")
            time.sleep(0.1)
        self.log = SchedulerLog(self.log_path)
        return self.log

    def alive(self) -> bool:
        return self.component is not None and self.component.alive()

    def stop(self) -> None:
        if self.component is not None:
            terminate(self.component, 5.0)
            self.component = None

    def __enter__(self) -> SchedulerLog:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
