"""Resource names the core treats specially (core/v1 ResourceName values), and their kinds."""

import re

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"


# ---- resource names (k8s.io/kubernetes/pkg/apis/core/v1/helper) --------------------------------

_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")


def _is_qualified_name(value: str) -> bool:
    """apimachinery validation.IsQualifiedName."""
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix or len(prefix) > 253 or not _DNS1123_SUBDOMAIN.match(prefix):
            return False
    else:
        return False
    return 0 < len(name) <= 63 and bool(_QUALIFIED_NAME.match(name))


def is_prefixed_native_resource(name: str) -> bool:
    return "kubernetes.io/" in name


def is_native_resource(name: str) -> bool:
    return "/" not in name or is_prefixed_native_resource(name)


def is_extended_resource_name(name: str) -> bool:
    if is_native_resource(name) or name.startswith("requests."):
        return False
    return _is_qualified_name("requests." + name)


def is_scalar_resource_name(name: str) -> bool:
    """schedutil.IsScalarResourceName: extended, hugepages, kubernetes.io-prefixed, attachable volumes."""
    return (
        is_extended_resource_name(name)
        or name.startswith("hugepages-")
        or is_prefixed_native_resource(name)
        or name.startswith("attachable-volumes-")
    )
