"""Structured logging: logfmt-style `key=value` extras after the message, or JSON lines."""

from __future__ import annotations

import json
import logging
from typing import Any

# Attributes every LogRecord has; anything else came in through `extra=`.
_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime", "taskName"}


def _extras(record: logging.LogRecord) -> dict[str, Any]:
    return {k: v for k, v in vars(record).items() if k not in _STANDARD and not k.startswith("_")}


def _logfmt(value: Any) -> str:
    text = str(value)
    return json.dumps(text) if (not text or any(c in text for c in ' ="')) else text


class KeyValueFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        extras = _extras(record)
        if extras:
            line += " " + " ".join(f"{k}={_logfmt(v)}" for k, v in extras.items())
        return line


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": self.formatTime(record),
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
            **{
                k: v if isinstance(v, int | float | bool | None) else str(v)
                for k, v in _extras(record).items()
            },
        }
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry)


def configure(level: str = "INFO", fmt: str = "text") -> None:
    handler = logging.StreamHandler()
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(KeyValueFormatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(getattr(logging, level.upper(), logging.INFO))
    # Third-party chatter stays out of info level.
    for noisy in ("kopf", "aiohttp.access", "kubernetes_asyncio"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))
