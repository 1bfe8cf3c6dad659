"""Our policy objects (SchedulingProfiles, EvictionPolicies) as their informers decode them.

The informer keys and versions an object by its metadata; spec and status stay plain JSON, as the
API sent them, for the stores to validate (they name the field of an invalid spec in its status).
"""

from __future__ import annotations

from typing import Any

import msgspec

from policy_scheduler.apiobjects import structs


class PolicyObject(msgspec.Struct, kw_only=True, forbid_unknown_fields=False):
    metadata: structs.ObjectMeta
    spec: Any = None
    status: Any = None


def policy_body(obj: PolicyObject) -> dict[str, Any]:
    """The object in the API's JSON shape (camelCase metadata, RFC 3339 times): what the stores'
    event handlers read."""
    body: dict[str, Any] = msgspec.to_builtins(obj)
    return body
