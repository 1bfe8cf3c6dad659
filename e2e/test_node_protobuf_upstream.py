"""The protobuf node decoder against upstream: its field numbers are those of the .proto files
the control plane was built from, and the real API server's protobuf node list decodes to the
same nodes as its JSON list (the informer's first list asks for protobuf, issue 12)."""

from __future__ import annotations

import re
import subprocess
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from policy_scheduler.apiobjects import structs
from policy_scheduler.apiobjects.convert_cluster import node_from_api
from policy_scheduler.apiobjects.decode import decode_list
from policy_scheduler.apiobjects.node_protobuf import MAGIC, SCHEMA, decode_node_list
from policy_scheduler.devcluster.kwokstages import go_module_cache
from policy_scheduler.devcluster.versions import control_plane
from policy_scheduler.kube import informer as inf
from policy_scheduler.kube.client import call, make_api_client, request, request_ok
from policy_scheduler.kube.media_types import JSON, PROTOBUF_OR_JSON
from policy_scheduler.kube.paths import NODES
from policy_scheduler.kube.timings import DEFAULTS
from policy_scheduler.scheduler import model
from polling import wait_until_async

CONTROL_PLANE = control_plane()
STAGING_VERSION = CONTROL_PLANE.staging
PROTO_FILES = (
    f"k8s.io/api@{STAGING_VERSION}/core/v1/generated.proto",
    f"k8s.io/apimachinery@{STAGING_VERSION}/pkg/apis/meta/v1/generated.proto",
    f"k8s.io/apimachinery@{STAGING_VERSION}/pkg/runtime/generated.proto",
    f"k8s.io/apimachinery@{STAGING_VERSION}/pkg/api/resource/generated.proto",
)
_FIELD = re.compile(
    r"^\s*(optional|repeated)?\s*(map<\s*string\s*,\s*[\w.]+\s*>|[\w.]+)\s+(\w+)\s*=\s*(\d+);"
)


def _upstream_proto_files() -> list[Path]:
    cache = go_module_cache()
    paths = [cache / name for name in PROTO_FILES]
    if not all(p.is_file() for p in paths):
        modules = [f"k8s.io/api@{STAGING_VERSION}", f"k8s.io/apimachinery@{STAGING_VERSION}"]
        subprocess.run(["go", "mod", "download", *modules], cwd=CONTROL_PLANE.gomod("kubernetes"), check=True)
    return paths


def _upstream_messages() -> dict[str, dict[str, tuple[int, str]]]:
    """message -> field -> (number, type as written: 'string', 'Time', 'repeated Taint', 'map<...>')."""
    messages: dict[str, dict[str, tuple[int, str]]] = {}
    for path in _upstream_proto_files():
        current: dict[str, tuple[int, str]] | None = None
        for line in path.read_text(encoding="utf-8").splitlines():
            start = re.match(r"^message (\w+) \{", line)
            if start:
                current = messages.setdefault(start.group(1), {})
                continue
            if line.startswith("}"):
                current = None
                continue
            found = _FIELD.match(line) if current is not None else None
            if found and current is not None:
                label, type_, name, number = found.groups()
                short = re.sub(r"[\w.]*\.(\w+)", r"\1", type_.replace(" ", ""))
                current[name] = (int(number), f"{label} {short}" if label == "repeated" else short)
    return messages


def _as_upstream(type_: str) -> str:
    if type_.startswith("map:"):
        return f"map<string,{type_[4:]}>"
    if type_.endswith("*"):
        return f"repeated {type_[:-1]}"
    return type_


def test_the_decoders_fields_are_upstreams() -> None:
    upstream = _upstream_messages()
    for message, fields in SCHEMA.items():
        assert message in upstream, message
        for name, number, type_ in fields:
            assert upstream[message].get(name) == (number, _as_upstream(type_)), f"{message}.{name}"


# ---- the real API server -----------------------------------------------------------------------


@pytest_asyncio.fixture(scope="module")
async def api(kubeconfig: Path) -> AsyncIterator[Any]:
    api_client = await make_api_client(str(kubeconfig))
    async with api_client:
        yield api_client


@pytest_asyncio.fixture
async def odd_nodes(api: Any) -> AsyncIterator[list[str]]:
    """Nodes with what the kwok nodes lack: taints, unschedulable, extended resources, images,
    and no allocatable (kwok manages every node and may fill in its status later: the test
    compares the two encodings of the same version, not the values set here)."""
    suffix = uuid.uuid4().hex[:6]
    bodies: list[dict[str, Any]] = [
        {
            "metadata": {"name": f"pb-tainted-{suffix}", "labels": {"pb-test": suffix, "zone": "z9"}},
            "spec": {
                "unschedulable": True,
                "taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}],
            },
        },
        {"metadata": {"name": f"pb-bare-{suffix}"}},
    ]
    statuses: list[dict[str, Any]] = [
        {
            "allocatable": {"cpu": "3500m", "memory": "8Gi", "example.com/gpu": "2", "pods": "20"},
            "capacity": {"cpu": "4", "memory": "8Gi", "example.com/gpu": "2", "pods": "20"},
            "images": [{"names": ["registry.k8s.io/pause:3.10", "pause@sha256:abc"], "sizeBytes": 300000}],
        },
        {"capacity": {"cpu": "2", "memory": "1Gi"}},
    ]
    names = [b["metadata"]["name"] for b in bodies]
    for body, status in zip(bodies, statuses, strict=True):
        await request_ok(api, "POST", "/api/v1/nodes", body=body)
        await request_ok(
            api,
            "PATCH",
            f"/api/v1/nodes/{body['metadata']['name']}/status",
            body={"status": status},
            content_type="application/merge-patch+json",
        )
    yield names
    for name in names:
        await request(api, "DELETE", f"/api/v1/nodes/{name}")


async def _both_encodings(api: Any) -> tuple[dict[str, model.Node], dict[str, model.Node]]:
    query = {"resourceVersion": "0"}
    as_protobuf = await call(api, "GET", NODES, query=query, accept=PROTOBUF_OR_JSON)
    as_json = await call(api, "GET", NODES, query=query, accept=JSON)
    assert as_protobuf.status == as_json.status == 200
    assert as_protobuf.body.startswith(MAGIC)  # the server did answer protobuf
    return (
        {n.metadata.name: node_from_api(n) for n in decode_node_list(as_protobuf.body).items},
        {n.metadata.name: node_from_api(n) for n in decode_list(as_json.body, structs.Node).items},
    )


async def test_protobuf_and_json_node_lists_agree(api: Any, odd_nodes: list[str]) -> None:
    async def same_versions() -> tuple[dict[str, model.Node], dict[str, model.Node]] | None:
        """Both lists, once they hold the same version of the odd nodes (kwok may be between)."""
        from_protobuf, from_json = await _both_encodings(api)
        versions = [(from_protobuf[n].resource_version, from_json[n].resource_version) for n in odd_nodes]
        return (from_protobuf, from_json) if all(a == b for a, b in versions) else None

    from_protobuf, from_json = await wait_until_async("both encodings of one version", same_versions)
    assert from_protobuf.keys() == from_json.keys()
    for name in odd_nodes:
        assert from_protobuf[name] == from_json[name], name
    for name in from_protobuf.keys() - set(odd_nodes):  # the kwok nodes: a heartbeat may differ
        a, b = from_protobuf[name], from_json[name]
        if a.resource_version == b.resource_version:
            assert a == b, name
    tainted = from_protobuf[odd_nodes[0]]
    assert tainted.unschedulable
    assert [t.key for t in tainted.taints] == ["dedicated"]
    assert tainted.labels["zone"] == "z9"
    # Set above, and kept by kwok: it only fills in what is missing.
    assert tainted.allocatable["example.com/gpu"] == 2
    assert from_protobuf[odd_nodes[1]].allocatable  # capacity, or what kwok set


@pytest.mark.parametrize("page_size", [1, 500])
async def test_the_node_informer_lists_as_protobuf(api: Any, odd_nodes: list[str], page_size: int) -> None:
    """First list from the watch cache, then a paginated relist from etcd: both protobuf."""
    seen: list[str] = []
    real_call = call

    async def recording_call(*args: Any, **kwargs: Any) -> Any:
        answer = await real_call(*args, **kwargs)
        seen.append(kwargs.get("accept", JSON) + (" magic" if answer.body.startswith(MAGIC) else ""))
        return answer

    informer = inf.Informer(
        api,
        NODES,
        structs.Node,
        node_from_api,
        timings=DEFAULTS.informer,
        page_size=page_size,
        list_format=inf.ListFormat(PROTOBUF_OR_JSON, decode_node_list),
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(inf, "call", recording_call)
        await informer._list_and_sync()
        first = dict(informer.store)
        await informer._list_and_sync()
    assert set(odd_nodes) <= set(first)
    assert set(informer.store) == set(first)
    assert seen
    assert all(s == f"{PROTOBUF_OR_JSON} magic" for s in seen)
    if page_size == 1:
        assert len(seen) > 2  # the relist went page by page
