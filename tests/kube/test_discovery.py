"""Served APIs: which watched collections are missing, and our own CRDs missing in one line."""

from __future__ import annotations

import pytest

from policy_scheduler.kube import paths
from policy_scheduler.kube.discovery import MissingCrdError, ServedApis, group_version

OURS = frozenset(
    {
        paths.SCHEDULING_PROFILES,
        paths.EVICTION_POLICIES,
        "/apis/scheduling.policy-scheduler.io/v1alpha1/priorityclassmirrors",
    }
)


def test_core_collections_are_always_served_and_others_when_discovered() -> None:
    served = ServedApis(frozenset({paths.CSI_NODES, *OURS}))
    assert served.missing([paths.PODS, paths.CSI_NODES, paths.RESOURCE_SLICES, paths.PODGROUPS]) == [
        paths.RESOURCE_SLICES,
        paths.PODGROUPS,
    ]
    served.require_own_crds()


def test_names_in_the_users_terms() -> None:
    assert group_version(paths.PODS) == "v1"
    assert group_version(paths.CSI_STORAGE_CAPACITIES) == "storage.k8s.io/v1"


def test_a_missing_crd_of_ours_is_named_with_how_to_install_it() -> None:
    served = ServedApis(OURS - {paths.EVICTION_POLICIES})
    with pytest.raises(MissingCrdError) as caught:
        served.require_own_crds()
    assert str(caught.value) == (
        "CustomResourceDefinition evictionpolicies.scheduling.policy-scheduler.io not installed (the API "
        "server does not serve scheduling.policy-scheduler.io/v1alpha1): install the CRDs with "
        "`kubectl apply -k manifests/` or the Helm chart (charts/policy-scheduler), or run with --install-crds"
    )
