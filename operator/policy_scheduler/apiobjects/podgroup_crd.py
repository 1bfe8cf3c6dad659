"""The PodGroup CRD (podgroups.scheduling.x-k8s.io, v1alpha1), installed with ours by --install-crds.

Its schema follows kubernetes-sigs/scheduler-plugins' apis/scheduling/v1alpha1 types (Apache-2.0),
so Kubeflow's and scheduler-plugins' manifests work unchanged; an existing copy of that CRD is
taken over by server-side apply. One addition: `status.conditions`, where policy-scheduler says why
a group waits (pruned, harmlessly, if the upstream CRD is installed instead).
"""

from __future__ import annotations

from typing import Any

from policy_scheduler.apiobjects.podgroup_api import GROUP, PLURAL, VERSION

NAME = f"{PLURAL}.{GROUP}"


def _int(description: str, fmt: str = "int32") -> dict[str, Any]:
    return {"type": "integer", "format": fmt, "description": description}


_QUANTITY = {
    "anyOf": [{"type": "integer"}, {"type": "string"}],
    "pattern": (
        r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
        r"(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
    ),
    "x-kubernetes-int-or-string": True,
}

_CONDITION = {
    "type": "object",
    "required": ["type", "status"],
    "properties": {
        "type": {"type": "string"},
        "status": {"type": "string"},
        "reason": {"type": "string"},
        "message": {"type": "string"},
        "lastTransitionTime": {"type": "string", "format": "date-time"},
    },
}


def podgroup_crd() -> dict[str, Any]:
    spec = {
        "type": "object",
        "description": "PodGroupSpec represents the template of a pod group.",
        "properties": {
            "minMember": _int("MinMember defines the minimal number of members/tasks to run the pod group."),
            "minResources": {
                "type": "object",
                "description": "MinResources defines the minimal resources of members to run the pod group.",
                "additionalProperties": _QUANTITY,
            },
            "scheduleTimeoutSeconds": _int(
                "ScheduleTimeoutSeconds defines the maximal time of members to wait."
            ),
        },
    }
    status = {
        "type": "object",
        "description": "PodGroupStatus represents the current state of a pod group.",
        "properties": {
            "phase": {"type": "string", "description": "Current phase of PodGroup."},
            "occupiedBy": {
                "type": "string",
                "description": "OccupiedBy marks the workload that owns the group.",
            },
            "scheduled": _int("The number of actively running pods."),
            "running": _int("The number of actively running pods."),
            "succeeded": _int("The number of pods which reached phase Succeeded."),
            "failed": _int("The number of pods which reached phase Failed."),
            "scheduleStartTime": {
                "type": "string",
                "format": "date-time",
                "description": "ScheduleStartTime of the group.",
            },
            "conditions": {
                "type": "array",
                "items": _CONDITION,
                "description": "policy-scheduler's addition.",
            },
        },
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": NAME,
            "annotations": {
                "api-approved.kubernetes.io": "https://github.com/kubernetes-sigs/scheduler-plugins/pull/50"
            },
        },
        "spec": {
            "group": GROUP,
            "names": {
                "kind": "PodGroup",
                "listKind": "PodGroupList",
                "plural": PLURAL,
                "singular": "podgroup",
                "shortNames": ["pg", "pgs"],
            },
            "scope": "Namespaced",
            "versions": [
                {
                    "name": VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "description": "PodGroup is a collection of Pod; used for batch workload.",
                            "properties": {
                                "apiVersion": {"type": "string"},
                                "kind": {"type": "string"},
                                "metadata": {"type": "object"},
                                "spec": spec,
                                "status": status,
                            },
                        }
                    },
                }
            ],
        },
    }
