"""Where scheduler-plugins' PodGroups live in the API (no imports: kube.paths reads these before
`run`'s heavy imports)."""

from __future__ import annotations

GROUP = "scheduling.x-k8s.io"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
PLURAL = "podgroups"
