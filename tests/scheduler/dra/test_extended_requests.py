"""createRequestsAndMappings and the extended-resource cache (extendeddynamicresources_test.go,
extendedresourcecache_test.go of v1.37.2), as tables."""

from __future__ import annotations

import pytest

from policy_scheduler.scheduler.dra.extended import (
    DEVICE_CLASS_PREFIX,
    ContainerExtendedResourceRequest,
    ExtendedResourceCache,
    is_dra_extended_resource_name,
    requests_and_mappings,
)
from policy_scheduler.scheduler.dra.model import DeviceClass, DeviceRequest, ExactDeviceRequest
from policy_scheduler.scheduler.model import Container, Pod

GPU = "example.com/gpu"
GPU1 = GPU + "1"
INIT = GPU + "init"
IMPLICIT_INIT = DEVICE_CLASS_PREFIX + "classInit"


def make_pod(
    containers: list[dict[str, int]],
    inits: list[dict[str, int]] = (),  # type: ignore[assignment]
    sidecars: tuple[int, ...] = (),
) -> Pod:
    """Containers named as upstream's wrappers name them: con<N>, init-con<N>, sidecar-con<N>."""
    init_containers = tuple(
        Container(
            f"sidecar-con{i}" if i in sidecars else f"init-con{i}",
            requests=r,
            restart_policy="Always" if i in sidecars else None,
        )
        for i, r in enumerate(inits)
    )
    return Pod(
        "my-pod",
        uid="1234",
        containers=tuple(Container(f"con{i}", requests=r) for i, r in enumerate(containers)),
        init_containers=init_containers,
    )


POD1 = make_pod([{GPU: 1, GPU1: 2}])
POD2 = make_pod([{GPU: 1}, {GPU1: 2}])
POD_INIT = make_pod([{GPU: 1}], [{INIT: 2}])
POD_INIT2 = make_pod([{GPU: 1}], [{INIT: 1}, {INIT: 2}])
POD_INIT3 = make_pod([{GPU: 1}], [{INIT: 1}, {INIT: 1}, {INIT: 2}], sidecars=(1,))
POD1_INIT_IMPLICIT = make_pod([], [{INIT: 1, IMPLICIT_INIT: 2}])
POD_INIT_IMPLICIT = make_pod([{GPU: 1}], [{INIT: 1}, {IMPLICIT_INIT: 2}])

RES = {GPU: 1}
RES2 = {GPU: 1, GPU1: 2}
RES_INIT = {GPU: 1, INIT: 2}
RES_INIT_IMPLICIT = {GPU: 1, INIT: 2, IMPLICIT_INIT: 2}
DEV_MAP = {GPU: "class"}
DEV_MAP2 = {GPU: "class", GPU1: "class1"}
DEV_MAP_INIT = {GPU: "class", INIT: "classInit", IMPLICIT_INIT: "classInit"}


def req(name: str, cls: str, count: int) -> tuple[str, str, int]:
    return (name, cls, count)


# (name, pod, extended resources, resource -> class, want (request, class, count) in order)
REQUEST_CASES: list[tuple[str, Pod, dict[str, int], dict[str, str], list[tuple[str, str, int]]]] = [
    ("nil", POD1, {}, {}, []),
    ("one resource match", POD1, RES, DEV_MAP, [req("container-0-request-0", "class", 1)]),
    (
        "one resource match, one resource not match",
        POD1,
        RES2,
        DEV_MAP,
        [req("container-0-request-0", "class", 1)],
    ),
    (
        "two resources match",
        POD1,
        RES2,
        DEV_MAP2,
        [req("container-0-request-0", "class", 1), req("container-0-request-1", "class1", 2)],
    ),
    (
        "two containers match",
        POD2,
        RES2,
        DEV_MAP2,
        [req("container-0-request-0", "class", 1), req("container-1-request-0", "class1", 2)],
    ),
    (
        "one init container, one regular container",
        POD_INIT,
        RES_INIT,
        DEV_MAP_INIT,
        [req("container-0-request-0", "classInit", 2), req("container-1-request-0", "class", 1)],
    ),
    (
        "two init containers, one regular container",
        POD_INIT2,
        RES_INIT,
        DEV_MAP_INIT,
        [req("container-1-request-0", "classInit", 2), req("container-2-request-0", "class", 1)],
    ),
    (
        "three init containers, one sidecar, one regular container",
        POD_INIT3,
        RES_INIT,
        DEV_MAP_INIT,
        [
            req("container-1-request-0", "classInit", 1),
            req("container-2-request-0", "classInit", 2),
            req("container-3-request-0", "class", 1),
        ],
    ),
]


@pytest.mark.parametrize(
    ("pod", "resources", "classes", "want"), [c[1:] for c in REQUEST_CASES], ids=[c[0] for c in REQUEST_CASES]
)
def test_requests(
    pod: Pod, resources: dict[str, int], classes: dict[str, str], want: list[tuple[str, str, int]]
) -> None:
    requests, _ = requests_and_mappings(pod, resources, classes)
    assert requests == tuple(DeviceRequest(n, ExactDeviceRequest(c, count=k)) for n, c, k in want)


def cer(container: str, resource: str, request: str) -> ContainerExtendedResourceRequest:
    return ContainerExtendedResourceRequest(container, resource, request)


MAPPING_CASES: list[
    tuple[str, Pod, dict[str, int], dict[str, str], list[ContainerExtendedResourceRequest]]
] = [
    (
        "one container, two requests",
        POD1,
        RES2,
        DEV_MAP2,
        [cer("con0", GPU, "container-0-request-0"), cer("con0", GPU1, "container-0-request-1")],
    ),
    (
        "one container, one explicit and one implicit request",
        POD1_INIT_IMPLICIT,
        RES_INIT_IMPLICIT,
        DEV_MAP_INIT,
        [
            cer("init-con0", IMPLICIT_INIT, "container-0-request-0"),
            cer("init-con0", INIT, "container-0-request-1"),
        ],
    ),
    (
        "two containers, two requests",
        POD2,
        RES2,
        DEV_MAP2,
        [cer("con0", GPU, "container-0-request-0"), cer("con1", GPU1, "container-1-request-0")],
    ),
    (
        "one init container, one regular container, one request",
        POD_INIT,
        RES_INIT,
        DEV_MAP_INIT,
        [cer("init-con0", INIT, "container-0-request-0"), cer("con0", GPU, "container-1-request-0")],
    ),
    (
        "three containers (two are init container), two requests",
        POD_INIT2,
        RES_INIT,
        DEV_MAP_INIT,
        [
            cer("init-con0", INIT, "container-1-request-0"),
            cer("init-con1", INIT, "container-1-request-0"),
            cer("con0", GPU, "container-2-request-0"),
        ],
    ),
    (
        "three containers (two are init container), both explicit and implicit resources",
        POD_INIT_IMPLICIT,
        RES_INIT_IMPLICIT,
        DEV_MAP_INIT,
        [
            cer("init-con0", INIT, "container-0-request-0"),
            cer("init-con1", IMPLICIT_INIT, "container-1-request-0"),
            cer("con0", GPU, "container-2-request-0"),
        ],
    ),
    (
        "four containers (two are init container, one sidecar), three requests",
        POD_INIT3,
        RES_INIT,
        DEV_MAP_INIT,
        [
            cer("init-con0", INIT, "container-1-request-0"),
            cer("sidecar-con1", INIT, "container-1-request-0"),
            cer("init-con2", INIT, "container-2-request-0"),
            cer("con0", GPU, "container-3-request-0"),
        ],
    ),
]


@pytest.mark.parametrize(
    ("pod", "resources", "classes", "want"), [c[1:] for c in MAPPING_CASES], ids=[c[0] for c in MAPPING_CASES]
)
def test_mappings(
    pod: Pod,
    resources: dict[str, int],
    classes: dict[str, str],
    want: list[ContainerExtendedResourceRequest],
) -> None:
    _, mappings = requests_and_mappings(pod, resources, classes)
    # Upstream's test sorts by request name, then container name, before comparing.
    assert sorted(mappings, key=lambda m: (m.request_name, m.container_name)) == want


@pytest.mark.parametrize(
    ("name", "want"),
    [
        ("example.com/gpu", True),
        (DEVICE_CLASS_PREFIX + "gpu", True),
        ("cpu", False),
        ("hugepages-2Mi", False),
        ("kubernetes.io/batteries", False),
    ],
)
def test_is_dra_extended_resource_name(name: str, want: bool) -> None:
    assert is_dra_extended_resource_name(name) == want


def cls(name: str, extended: str | None = None, created: float = 0.0) -> DeviceClass:
    return DeviceClass(name, extended_resource_name=extended, created=created)


def test_cache_maps_explicit_and_implicit_names() -> None:
    cache = ExtendedResourceCache()
    gpu = cls("gpu", GPU)
    cache.upsert(gpu, None)
    assert cache.device_class(GPU) == gpu
    assert cache.device_class(DEVICE_CLASS_PREFIX + "gpu") == gpu
    assert cache.device_class("example.com/other") is None
    renamed = cls("gpu", "example.com/other", created=0.0)
    cache.upsert(renamed, gpu)  # the explicit name changes: the old one goes
    assert cache.device_class(GPU) is None
    assert cache.device_class("example.com/other") == renamed
    cache.delete(renamed)
    assert cache.device_class("example.com/other") is None
    assert cache.device_class(DEVICE_CLASS_PREFIX + "gpu") is None


@pytest.mark.parametrize(
    ("first", "second", "winner"),
    [
        (cls("old", GPU, 1.0), cls("new", GPU, 2.0), "new"),  # the newer class wins
        (cls("new", GPU, 2.0), cls("old", GPU, 1.0), "new"),  # an older one does not take over
        (cls("b", GPU, 1.0), cls("a", GPU, 1.0), "a"),  # same age: the lower name
        (cls("a", GPU, 1.0), cls("b", GPU, 1.0), "a"),
    ],
)
def test_cache_clash_prefers_the_newest_class_then_the_lower_name(
    first: DeviceClass, second: DeviceClass, winner: str
) -> None:
    cache = ExtendedResourceCache()
    cache.upsert(first, None)
    cache.upsert(second, None)
    served = cache.device_class(GPU)
    assert served is not None
    assert served.name == winner
    loser = second if winner == first.name else first
    # Upstream returns before mapping anything for the losing class, its implicit name included.
    if loser is second:
        assert cache.device_class(DEVICE_CLASS_PREFIX + loser.name) is None
