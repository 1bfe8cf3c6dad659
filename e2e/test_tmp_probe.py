from __future__ import annotations

import time
from collections.abc import Callable

from fixtures_faults import FaultEnv, Scene


def test_probe(faults: FaultEnv, fault_scene: Callable[..., Scene]) -> None:
    s = fault_scene("probe")
    s.add_nodes(1, cpu="1")
    s.create([s.pod("p", cpu="2")])
    s.stays_unbound(["p"], 3)
    t = time.monotonic()
    s.add_nodes(1, cpu="4")
    t2 = time.monotonic()
    s.wait_bound(["p"], timeout=120)
    print(f"\nPROBE node create+untaint {t2 - t:.1f}s, bound after {time.monotonic() - t:.1f}s")
