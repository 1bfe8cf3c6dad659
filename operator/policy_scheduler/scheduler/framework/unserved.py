"""The APIs the cluster does not serve, as the plugins that read them see it.

The operator learns them from API discovery (kube/discovery.py) and fills this in; simulate and
the tests leave it empty (everything served). A plugin whose API is missing is off: the pods that
need it wait with `reason(api)`, which names the API, and are never bound without it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

# The APIs plugins ask about, named as a user knows them (group/version resource).
DRA = "resource.k8s.io/v1"
PODGROUPS = "scheduling.x-k8s.io/v1alpha1 podgroups"
# The Workload API: scheduling.k8s.io v1alpha1 workloads (v1.35), v1alpha2 or v1beta1 podgroups.
WORKLOAD_API = "scheduling.k8s.io Workload API"
CSI_STORAGE_CAPACITIES = "storage.k8s.io/v1 csistoragecapacities"
VOLUME_ATTACHMENTS = "storage.k8s.io/v1 volumeattachments"


class UnservedApis:
    def __init__(self, missing: Mapping[str, str] | None = None) -> None:
        self._missing: dict[str, str] = dict(missing or {})

    def set(self, missing: Mapping[str, str]) -> None:
        """api -> why pods that need it wait (a whole sentence naming the API)."""
        self._missing = dict(missing)

    def reason(self, api: str) -> str | None:
        return self._missing.get(api)

    def __bool__(self) -> bool:
        return bool(self._missing)

    def __iter__(self) -> Iterator[str]:
        return iter(self._missing)
