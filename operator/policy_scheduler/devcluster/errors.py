"""The dev cluster's one error type."""

from __future__ import annotations


class DevClusterError(RuntimeError):
    """The dev cluster could not be started or reached; the message says why."""
