"""The start-up failures a user can fix: `run` prints their one-line message and exits 1.

Kept apart from the modules that raise them, so that start-up (service/startup.py) catches them
without importing those modules before it needs them.
"""

from __future__ import annotations


class StartError(Exception):
    """What failed and how to fix it, in one line."""
