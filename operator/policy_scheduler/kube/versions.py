"""resourceVersions compared as what an etcd-backed API server makes them: revisions.

The API calls them opaque; the watch cache itself orders them as etcd revisions, and that is
what catching up to "everything written before this Lease write" needs.
"""

from __future__ import annotations


def resource_version_number(version: str) -> int:
    """The revision a resourceVersion is (0 when it is not a number)."""
    return int(version) if version.isdigit() else 0
