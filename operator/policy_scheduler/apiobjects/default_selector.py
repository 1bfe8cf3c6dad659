"""The `owner_selectors` service of PodTopologySpread: upstream helper.DefaultSelector over the
Services, ReplicationControllers, ReplicaSets and StatefulSets the operator's informers keep
(kube/informer.py OWNER_RESOURCES) or a simulation loads. Pure: it never calls the API.

For a pod it returns the selector that default topology spread constraints count pods with:

- the `spec.selector` maps of the Services of the pod's namespace whose selector matches the
  pod's labels (GetPodServices; a nil selector matches nothing), merged;
- then, if the pod's controller reference (the first ownerReference with controller=true) names
  a ReplicationController of the namespace, its selector map merged in (it wins on conflict, as
  labels.Merge); if it names a ReplicaSet or StatefulSet, the requirements of its
  metav1.LabelSelector added to those above (a nil or unparsable selector adds none). As
  upstream, the controller is looked up by name, not matched by selector. Upstream also checks
  the reference's apiVersion (v1, apps/v1); the model's OwnerReference has no apiVersion, so
  only the kind is checked here;
- None when that leaves no requirement at all (upstream's empty selector: no default spreading).

Objects are kept by namespace. Results are cached per (namespace, pod labels, controller
reference), so the replicas of one workload share one computation; any change to an object of
a namespace drops that namespace's cache. Updates that leave kind, name and selector unchanged
(status updates, which are most of them) change nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from policy_scheduler.apiobjects.owners import (
    REPLICA_SET,
    REPLICATION_CONTROLLER,
    SERVICE,
    STATEFUL_SET,
    OwnerInfo,
)
from policy_scheduler.scheduler.model import LabelSelector, Pod, Requirement
from policy_scheduler.scheduler.selectors import SelectorError, compile_label_selector

_CONTROLLER_KINDS = frozenset((REPLICATION_CONTROLLER, REPLICA_SET, STATEFUL_SET))
MAX_CACHED_PER_NAMESPACE = 4096

Labels = tuple[tuple[str, str], ...]
# (pod labels, (controller kind, controller name) or None)
_CacheKey = tuple[frozenset[tuple[str, str]], tuple[str, str] | None]
_MISS: Any = object()


def _requirements(selector: LabelSelector | None) -> tuple[Requirement, ...]:
    """metav1.LabelSelectorAsSelector(...).Requirements(): none for nil, empty or invalid."""
    try:
        compiled = compile_label_selector(selector)
    except SelectorError:
        return ()  # DefaultSelector ignores a selector that does not convert
    return tuple(Requirement(key, op, tuple(sorted(values))) for key, op, values in compiled.requirements)


class DefaultSelectorIndex:
    """Services and controllers by namespace; `owner_selectors` is the plugin's service.

    `add`, `update` and `delete` take OwnerInfo and fit Informer callbacks directly.
    """

    def __init__(
        self, objects: Iterable[OwnerInfo] = (), *, max_cached: int = MAX_CACHED_PER_NAMESPACE
    ) -> None:
        # namespace -> Service name -> spec.selector (Services with a nil selector are left out)
        self._services: dict[str, dict[str, Labels]] = {}
        # (kind, namespace, name) -> (selector map merged in, requirements added)
        self._controllers: dict[tuple[str, str, str], tuple[Labels, tuple[Requirement, ...]]] = {}
        self._cache: dict[str, dict[_CacheKey, LabelSelector | None]] = {}
        self._max_cached = max_cached
        for obj in objects:
            self.add(obj)

    # ---- changes (Informer callbacks) -----------------------------------------------------------

    def add(self, obj: OwnerInfo) -> None:
        self._cache.pop(obj.namespace, None)
        if obj.kind == SERVICE:
            services = self._services.setdefault(obj.namespace, {})
            if obj.labels is None:
                services.pop(obj.name, None)
            else:
                services[obj.name] = obj.labels
            if not services:
                del self._services[obj.namespace]
        elif obj.kind == REPLICATION_CONTROLLER:
            self._controllers[obj.kind, obj.namespace, obj.name] = (obj.labels or (), ())
        elif obj.kind in (REPLICA_SET, STATEFUL_SET):
            self._controllers[obj.kind, obj.namespace, obj.name] = ((), _requirements(obj.selector))

    def update(self, old: OwnerInfo, new: OwnerInfo) -> None:
        if old == new:
            return  # a status-only change
        if (old.kind, old.namespace, old.name) != (new.kind, new.namespace, new.name):
            self.delete(old)
        self.add(new)

    def delete(self, obj: OwnerInfo) -> None:
        self._cache.pop(obj.namespace, None)
        if obj.kind == SERVICE:
            services = self._services.get(obj.namespace)
            if services is not None:
                services.pop(obj.name, None)
                if not services:
                    del self._services[obj.namespace]
        else:
            self._controllers.pop((obj.kind, obj.namespace, obj.name), None)

    def __len__(self) -> int:
        """How many Services (with a selector) and controllers are indexed."""
        return sum(map(len, self._services.values())) + len(self._controllers)

    def cached(self, namespace: str) -> int:
        """How many answers are cached for the namespace (none after a change there)."""
        return len(self._cache.get(namespace, ()))

    # ---- the service ------------------------------------------------------------------------------

    def owner_selectors(self, pod: Pod) -> LabelSelector | None:
        """helper.DefaultSelector(pod): None when nothing selects the pod."""
        owner = next((ref for ref in pod.owner_references if ref.controller), None)
        controller = (
            (owner.kind, owner.name) if owner is not None and owner.kind in _CONTROLLER_KINDS else None
        )
        key: _CacheKey = (frozenset(pod.labels.items()), controller)
        cache = self._cache.get(pod.namespace)
        if cache is None:
            cache = self._cache[pod.namespace] = {}
        else:
            hit = cache.get(key, _MISS)
            if hit is not _MISS:
                result: LabelSelector | None = hit
                return result
        if len(cache) >= self._max_cached:
            cache.clear()
        result = cache[key] = self._compute(pod.namespace, pod.labels, controller)
        return result

    def _compute(
        self, namespace: str, pod_labels: Mapping[str, str], controller: tuple[str, str] | None
    ) -> LabelSelector | None:
        labels: dict[str, str] = {}
        for selector in self._services.get(namespace, {}).values():
            if all(pod_labels.get(k) == v for k, v in selector):
                labels.update(selector)
        requirements: tuple[Requirement, ...] = ()
        if controller is not None:
            found = self._controllers.get((controller[0], namespace, controller[1]))
            if found is not None:
                merged, requirements = found
                labels.update(merged)
        if not labels and not requirements:
            return None
        return LabelSelector(match_labels=tuple(sorted(labels.items())), match_expressions=requirements)
