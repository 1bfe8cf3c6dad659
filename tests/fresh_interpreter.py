"""Run test code in a fresh Python interpreter: for what must happen before a module is imported."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Mapping


def run_python(code: str, env: Mapping[str, str] | None = None) -> str:
    """`code` (dedented) in a new interpreter with this environment plus `env`; its stdout, stripped."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **(env or {})},
    )
    return done.stdout.strip()
