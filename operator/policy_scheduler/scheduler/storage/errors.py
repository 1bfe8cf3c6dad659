"""NotFound messages as kube-scheduler's informer listers word them (singular resource names)."""

from __future__ import annotations


def pvc_not_found(name: str) -> str:
    return f'persistentvolumeclaim "{name}" not found'


def pv_not_found(name: str) -> str:
    return f'persistentvolume "{name}" not found'


def storage_class_not_found(name: str) -> str:
    return f'storageclass.storage.k8s.io "{name}" not found'
