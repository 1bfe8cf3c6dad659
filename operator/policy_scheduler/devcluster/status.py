"""What `dev-cluster status` reports: each component's process and whether the API is ready."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ComponentStatus:
    name: str
    pid: int
    alive: bool
    log: Path


@dataclass(frozen=True)
class ClusterStatus:
    workdir: Path
    server: str | None
    kubeconfig: Path
    components: tuple[ComponentStatus, ...]
    api_ready: bool
    versions: str = ""

    @property
    def running(self) -> bool:
        return bool(self.components) and self.api_ready and all(c.alive for c in self.components)

    def describe(self) -> str:
        if not self.components:
            return f"dev cluster: not running (workdir {self.workdir})"
        alive = sum(c.alive for c in self.components)
        state = "running" if self.running else "DEAD (stale state)" if not alive else "DEGRADED"
        lines = [
            f"dev cluster: {state}",
            f"  server:     {self.server} ({'ready' if self.api_ready else 'not ready'})",
            f"  kubeconfig: {self.kubeconfig}",
        ]
        if self.versions:
            lines.append(f"  versions:   {self.versions}")
        for c in self.components:
            lines.append(f"  {c.name:<24} pid {c.pid:<8} {'up' if c.alive else 'DEAD':<5} log {c.log}")
        return "\n".join(lines)
