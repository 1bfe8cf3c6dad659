"""The dev cluster behaves like a real cluster where it matters to a scheduler:
real API server, Ready nodes with capacity, kwok driving bound pods, and PDB status."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest_asyncio
from kubernetes_asyncio import client, config
from kubernetes_asyncio.client.exceptions import ApiException

from policy_scheduler.devcluster.cluster import DevCluster
from polling import wait_until_async

# No scheduler has this name, so only the test decides where its pods go.
NO_SCHEDULER = "devcluster-e2e-nobody"


@pytest_asyncio.fixture(scope="module")
async def api(kubeconfig: Path) -> AsyncIterator[client.ApiClient]:
    api_client = await config.new_client_from_config(config_file=str(kubeconfig), persist_config=False)
    async with api_client:
        yield api_client


@pytest_asyncio.fixture(scope="module")
async def namespace(api: client.ApiClient) -> AsyncIterator[str]:
    name = f"devcluster-e2e-{uuid.uuid4().hex[:6]}"
    core = client.CoreV1Api(api)
    await core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    yield name
    await core.delete_namespace(name)  # the namespace controller finishes it off


async def kwok_node(api: client.ApiClient) -> str:
    nodes = await client.CoreV1Api(api).list_node(label_selector="type=kwok")
    return str(nodes.items[0].metadata.name)


def pod_manifest(name: str, labels: dict[str, str]) -> client.V1Pod:
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name, labels=labels),
        spec=client.V1PodSpec(
            scheduler_name=NO_SCHEDULER,
            containers=[client.V1Container(name="main", image="registry.k8s.io/pause:3.10")],
        ),
    )


async def create_bound_pod(
    api: client.ApiClient, namespace: str, name: str, node: str, **labels: str
) -> None:
    """Create a pod and bind it the way a scheduler does: POST pods/<name>/binding."""
    core = client.CoreV1Api(api)
    await core.create_namespaced_pod(namespace, pod_manifest(name, labels))
    binding = client.V1Binding(
        metadata=client.V1ObjectMeta(name=name),
        target=client.V1ObjectReference(api_version="v1", kind="Node", name=node),
    )
    # The API answers with a Status, which the generated client fails to parse as a V1Binding
    # ("target must not be None"), so the raw response is taken instead.
    response: Any = await core.create_namespaced_pod_binding(name, namespace, binding, _preload_content=False)
    response.release()


async def pod_running(api: client.ApiClient, namespace: str, name: str) -> bool:
    pod = await client.CoreV1Api(api).read_namespaced_pod(name, namespace)
    ready = any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or [])
    return bool(pod.status.phase == "Running" and ready)


async def test_api_server_reports_pinned_version(api: client.ApiClient, dev_cluster: DevCluster) -> None:
    version = await client.VersionApi(api).get_code()
    assert version.git_version == dev_cluster.versions.kubernetes


async def test_nodes_are_ready_with_allocatable(api: client.ApiClient) -> None:
    nodes = (await client.CoreV1Api(api).list_node(label_selector="type=kwok")).items
    assert len(nodes) >= 10
    for node in nodes:
        ready = [c for c in node.status.conditions if c.type == "Ready"]
        assert ready, node.metadata.name
        assert ready[0].status == "True", node.metadata.name
        assert node.status.allocatable["cpu"] == "32"
        assert node.status.allocatable["pods"] == "110"
        assert not node.spec.taints, f"{node.metadata.name} is tainted: {node.spec.taints}"
    zones = {n.metadata.labels["topology.kubernetes.io/zone"] for n in nodes}
    assert zones == {"zone-a", "zone-b", "zone-c"}


async def test_bound_pod_runs_and_deleted_pod_goes_away(api: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api)
    node = await kwok_node(api)
    await create_bound_pod(api, namespace, "bound-by-hand", node)

    await wait_until_async("pod Running and Ready", lambda: pod_running(api, namespace, "bound-by-hand"))
    pod = await core.read_namespaced_pod("bound-by-hand", namespace)
    assert pod.spec.node_name == node
    assert pod.status.pod_ip

    await core.delete_namespaced_pod("bound-by-hand", namespace)

    async def gone() -> bool:
        try:
            await core.read_namespaced_pod("bound-by-hand", namespace)
        except ApiException as exc:
            if exc.status == 404:
                return True
            raise
        return False

    await wait_until_async("deleted pod removed by kwok", gone)


async def test_disruption_controller_computes_pdb_status(api: client.ApiClient, namespace: str) -> None:
    node = await kwok_node(api)
    for i in range(2):
        await create_bound_pod(api, namespace, f"guarded-{i}", node, app="guarded")
    policy = client.PolicyV1Api(api)
    pdb = client.V1PodDisruptionBudget(
        metadata=client.V1ObjectMeta(name="guarded"),
        spec=client.V1PodDisruptionBudgetSpec(
            min_available=1, selector=client.V1LabelSelector(match_labels={"app": "guarded"})
        ),
    )
    await policy.create_namespaced_pod_disruption_budget(namespace, pdb)

    async def computed() -> bool:
        status = (await policy.read_namespaced_pod_disruption_budget("guarded", namespace)).status
        return bool(
            status is not None
            and status.observed_generation == 1
            and status.expected_pods == 2
            and status.current_healthy == 2
            and status.disruptions_allowed == 1
        )

    await wait_until_async("PDB status from the disruption controller", computed)
