"""The cluster for comparing our core with the kube-scheduler release it models.

Our scheduling core re-implements kube-scheduler CORE_MODEL_KUBERNETES_VERSION. The tests that
require full agreement with kube-scheduler run against that release (docs/parity.md,
"Versions"): on the session's own cluster when it runs that release, else on a cluster of
that release started for them.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from controlplane import build_if_needed
from policy_scheduler.devcluster.cluster import DevCluster
from policy_scheduler.devcluster.versions import CORE_MODEL_KUBERNETES_VERSION, control_plane

# As many nodes as the session cluster, so scenarios see the same shared-cluster shape.
CORE_MODEL_CLUSTER_NODES = 10


@pytest.fixture(scope="session")
def core_model_cluster(
    dev_cluster: DevCluster, tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config
) -> Iterator[DevCluster]:
    """A running cluster of the Kubernetes release our scheduling core models."""
    versions = control_plane(CORE_MODEL_KUBERNETES_VERSION)
    if dev_cluster.versions == versions:
        yield dev_cluster
        return
    build_if_needed(pytestconfig, versions)
    cluster = DevCluster(
        tmp_path_factory.mktemp("core-model-cluster"), nodes=CORE_MODEL_CLUSTER_NODES, versions=versions
    )
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()
