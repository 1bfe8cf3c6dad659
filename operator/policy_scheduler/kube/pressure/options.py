"""`policy-scheduler run`'s node-pressure options (a light module: the command line reads it)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PressureOptions:
    """`policy-scheduler run`'s node-pressure options."""

    interval: float = 15.0  # metrics-server's default resolution: a shorter poll reads the same sample
    kubelet_proxy: bool = False  # read Summary and /configz through nodes/proxy (RBAC opt-in)
    configz_interval: float = 600.0  # a kubelet's config changes with a restart: read it seldom
    slice: int = 250  # nodes handled between yields to the event loop


DEFAULT_OPTIONS = PressureOptions()
