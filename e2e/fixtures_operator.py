"""The operator under test: the real `policy-scheduler run` process against the dev cluster."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubectl import Kubectl
from polling import wait_until

# Profiles labelled with this are served only by the operators their test starts itself.
ISOLATED_LABEL = "e2e-isolated"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class OperatorProcess:
    # The admin installs CRDs; an operator running as its ServiceAccount may not (RBAC test).
    install_crds = True

    def __init__(self, kubeconfig: Path, log_path: Path, *extra: str) -> None:
        self.port = free_port()
        self.log_path = log_path
        cmd = [
            sys.executable,
            "-m",
            "policy_scheduler.cli",
            "--log-level",
            "INFO",
            "run",
            "--kubeconfig",
            str(kubeconfig),
            *(["--install-crds"] if self.install_crds else []),
            "--metrics-host",
            "127.0.0.1",
            "--metrics-port",
            str(self.port),
            *extra,
        ]
        self.log = log_path.open("w")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)

    def wait_ready(self, timeout: float = 60.0) -> None:
        def ready() -> bool:
            if self.proc.poll() is not None:
                raise RuntimeError(f"operator exited with {self.proc.returncode}:\n{self.tail()}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/readyz", timeout=2) as r:
                    return bool(r.status == 200)
            except OSError:
                return False

        try:
            wait_until("the operator's /readyz", ready, timeout=timeout, interval=0.3)
        except AssertionError as exc:
            raise AssertionError(f"{exc}:\n{self.tail()}") from None

    def metrics(self) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=5) as r:
            return str(r.read().decode())

    def tail(self, lines: int = 40) -> str:
        self.log.flush()
        return "\n".join(self.log_path.read_text().splitlines()[-lines:])

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, 9)
                self.proc.wait()
        self.log.close()


@pytest.fixture(scope="session")
def kubectl(kubeconfig: Path) -> Kubectl:
    return Kubectl(kubeconfig)


@pytest.fixture(scope="session")
def operator_process(kubeconfig: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[OperatorProcess]:
    """One operator for the session (leader election off); tests use their own profiles."""
    process = OperatorProcess(
        kubeconfig,
        tmp_path_factory.mktemp("operator") / "operator.log",
        "--no-leader-elect",
        "--profile-selector",
        f"!{ISOLATED_LABEL}",
    )
    try:
        process.wait_ready()
        yield process
    finally:
        process.stop()
