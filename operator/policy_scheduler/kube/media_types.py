"""Content types of API requests and answers (no imports: `run` reads them before its heavy imports)."""

from __future__ import annotations

JSON = "application/json"
PROTOBUF = "application/vnd.kubernetes.protobuf"
# As client-go asks for core types: protobuf, or JSON for what the server cannot encode so.
PROTOBUF_OR_JSON = f"{PROTOBUF}, {JSON}"
