"""Where the Workload API lives (scheduling.k8s.io), per release (no imports: kube.paths reads
these before `run`'s heavy imports).

v1.35 serves Workloads (v1alpha1) whose spec.podGroups are the gangs; v1.36 (v1alpha2) and v1.37
(v1beta1) serve PodGroup objects, which pods name in spec.schedulingGroup. None of them is served
unless the API server runs with --feature-gates=GenericWorkload=true and the version enabled in
--runtime-config.
"""

from __future__ import annotations

GROUP = "scheduling.k8s.io"
WORKLOADS = "workloads"
PODGROUPS = "podgroups"
# (version, resource) the scheduler watches, newest first: a server serves at most one of them.
PODGROUP_VERSIONS = ("v1beta1", "v1alpha2")
WORKLOAD_VERSION_V1_35 = "v1alpha1"
