"""Subcommand handlers imported when they run, not when the parser is built.

`policy-scheduler run` is the operator's start-up path (issue 12: time to first bind): building
the parser must not import what only `explain` or `dev-cluster` need (their HTTP clients,
snapshot readers, build tooling).
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Deferred:
    """A handler `module.function(args) -> int`, imported on the first call."""

    module: str
    function: str

    def __call__(self, args: argparse.Namespace) -> int:
        handler: Callable[[argparse.Namespace], int] = getattr(
            importlib.import_module(self.module), self.function
        )
        return handler(args)
