"""The last accepted version of one policy object, shared by every store and controller.

An invalid update never replaces a good version: the record keeps the value in force, the
generation and raw spec it came from, and why the latest generation was rejected. The spec and
generation are persisted in the object's status (lastAcceptedSpec, lastAcceptedGeneration), so
a restarted or newly elected operator serves the same version; `restore` is the one place that
reads them back.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")

LAST_ACCEPTED_SPEC = "lastAcceptedSpec"
LAST_ACCEPTED_GENERATION = "lastAcceptedGeneration"


@dataclass(slots=True)
class LastAccepted(Generic[T]):
    value: T | None = None  # what is in force (None: nothing was ever accepted)
    generation: int | None = None  # the generation `value` was accepted from
    spec: dict[str, Any] | None = None  # the raw spec of that generation, as persisted
    error: str | None = None  # why the latest generation was rejected (None: it is in force)
    restored: bool = False  # `value` was read back from the status, not accepted by this process

    def accept(self, generation: int, spec: Mapping[str, Any] | None, value: T) -> bool:
        """The latest generation is valid; True if the value in force changed."""
        changed = self.value != value
        self.value, self.generation, self.error, self.restored = value, generation, None, False
        self.spec = copy.deepcopy(dict(spec or {}))
        return changed

    def reject(self, error: str) -> bool:
        """The latest generation is invalid; True if this is a new verdict (not a re-check)."""
        new = self.error != error
        self.error = error
        return new

    def restore(self, status: Any, compile_spec: Callable[[dict[str, Any]], T]) -> bool:
        """Serve the version persisted in `status` (nothing accepted yet in this process).

        A persisted spec that no longer compiles (e.g. after an upgrade) is ignored: failing
        closed beats serving something nobody accepted."""
        if self.value is not None or not isinstance(status, Mapping):
            return False
        spec, generation = status.get(LAST_ACCEPTED_SPEC), status.get(LAST_ACCEPTED_GENERATION)
        if not isinstance(spec, dict) or not isinstance(generation, int):
            return False
        try:
            value = compile_spec(spec)
        except ValueError as exc:
            log.warning("persisted last accepted spec ignored", extra={"error": str(exc)})
            return False
        self.value, self.generation, self.restored = value, generation, True
        self.spec = copy.deepcopy(spec)
        return True

    @property
    def in_force(self) -> bool:
        return self.value is not None

    def status_fields(self) -> dict[str, Any]:
        """The status fields that persist the version in force."""
        if self.value is None or self.generation is None:
            return {}
        return {LAST_ACCEPTED_GENERATION: self.generation, LAST_ACCEPTED_SPEC: self.spec or {}}

    def describe(self, latest: int) -> str:
        """Which generation is in force and why, for condition messages."""
        if self.value is None:
            return f"generation {latest} was rejected and no earlier generation was ever accepted"
        if self.error is None and self.generation == latest:
            return f"generation {latest} is in force"
        origin = " (restored from status.lastAcceptedSpec)" if self.restored else ""
        return f"generation {latest} was rejected; generation {self.generation} stays in force{origin}"
