"""API-server style NotFound messages the volume plugins report verbatim."""

from __future__ import annotations


def pvc_not_found(name: str) -> str:
    return f'persistentvolumeclaims "{name}" not found'


def pv_not_found(name: str) -> str:
    return f'persistentvolumes "{name}" not found'


def storage_class_not_found(name: str) -> str:
    return f'storageclasses.storage.k8s.io "{name}" not found'
