"""The error raised when an API object cannot be turned into the scheduler's model."""

from __future__ import annotations

import re

_MSGSPEC_AT = re.compile(r"^(?P<msg>.*) - at `\$(?:\.object)?(?P<path>[^`]*)`$", re.DOTALL)


class ConversionError(ValueError):
    """Names the object and the field: ``Pod default/web-1: spec.priority: expected int``."""

    def __init__(self, path: str, message: str, obj: str = "") -> None:
        self.path = path
        self.message = message
        self.obj = obj
        super().__init__(str(self))

    def __str__(self) -> str:
        return ": ".join(part for part in (self.obj, self.path, self.message) if part)

    def for_object(self, obj: str) -> ConversionError:
        return ConversionError(self.path, self.message, obj)

    @classmethod
    def from_msgspec(cls, error: Exception | str, obj: str = "") -> ConversionError:
        """Split msgspec's "Expected `int`, got `str` - at `$.spec.priority`" into field and message."""
        text = str(error)
        match = _MSGSPEC_AT.match(text)
        if match is None:
            return cls("", text, obj)
        return cls(match["path"].lstrip("."), match["msg"], obj)
