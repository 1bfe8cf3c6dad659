"""End-to-end fixtures: one real local control plane per test session.

Set POLICY_SCHEDULER_KUBECONFIG to run against a cluster that is already up (for example
`policy-scheduler dev-cluster up`, whose kubeconfig sits next to its state file) instead of
starting one. POLICY_SCHEDULER_K8S_VERSION chooses the Kubernetes version of the clusters the
suite starts and of the reference kube-scheduler (devcluster/versions.py lists them).
Further fixtures belong in e2e/fixtures_*.py, not here.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from controlplane import build_if_needed
from policy_scheduler.devcluster.cluster import DevCluster
from policy_scheduler.devcluster.versions import UnsupportedVersionError, control_plane

KUBECONFIG_ENV = "POLICY_SCHEDULER_KUBECONFIG"
E2E_DIR = Path(__file__).parent
DEV_CLUSTER_NODES = 10


def pytest_configure(config: pytest.Config) -> None:
    try:
        control_plane()
    except UnsupportedVersionError as exc:
        raise pytest.UsageError(str(exc)) from exc


def pytest_report_header(config: pytest.Config) -> str:
    return f"control plane: {control_plane().summary()}"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if E2E_DIR in item.path.parents:
            item.add_marker(pytest.mark.e2e)


def _external_kubeconfig() -> Path | None:
    value = os.environ.get(KUBECONFIG_ENV)
    return Path(value).expanduser() if value else None


@pytest.fixture(scope="session")
def dev_cluster(
    tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config
) -> Iterator[DevCluster]:
    """The running dev cluster; tests may add nodes with `dev_cluster.create_nodes(...)`."""
    external = _external_kubeconfig()
    if external is not None:
        attached = DevCluster.from_state(external.parent)
        if attached is None:
            pytest.skip(f"{KUBECONFIG_ENV}={external} was not started by `dev-cluster up`; cannot manage it")
        yield attached  # someone else's cluster: never stopped here
        return
    build_if_needed(pytestconfig)
    cluster = DevCluster(tmp_path_factory.mktemp("dev-cluster"), nodes=DEV_CLUSTER_NODES)
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def kubeconfig(request: pytest.FixtureRequest) -> Path:
    """Path of an admin kubeconfig for the cluster under test."""
    external = _external_kubeconfig()
    if external is not None:
        return external
    cluster: DevCluster = request.getfixturevalue("dev_cluster")
    return cluster.kubeconfig


from fixtures_faults import fault_scene, faults  # noqa: E402,F401  (fixtures)
from fixtures_operator import kubectl, operator_process  # noqa: E402,F401  (fixtures)
