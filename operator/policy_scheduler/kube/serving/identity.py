"""Who a request comes from, and what it asks to do: the attributes a SubjectAccessReview
carries (k8s.io/apiserver's user.Info and authorizer.Attributes)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class UserInfo:
    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    # Sorted (key, values) pairs, so that a user is hashable and can key the caches.
    extra: tuple[tuple[str, tuple[str, ...]], ...] = field(default=())


@dataclass(frozen=True, slots=True)
class PathAttributes:
    """A request for a non-resource URL, such as GET /metrics."""

    verb: str
    path: str


@dataclass(frozen=True, slots=True)
class ResourceAttributes:
    """A request about an API object, such as `get` on pods/NAME in NAMESPACE."""

    verb: str
    resource: str
    namespace: str = ""
    name: str = ""
    group: str = ""
    subresource: str = ""


Attributes = PathAttributes | ResourceAttributes


def forbidden_message(user: UserInfo, attributes: Attributes) -> str:
    """The message of the 403 Status, word for word as the API server's responsewriters write it."""
    if isinstance(attributes, PathAttributes):
        reason = f'User "{user.name}" cannot {attributes.verb} path "{attributes.path}"'
        return f"forbidden: {reason}"
    resource = attributes.resource
    if attributes.subresource:
        resource = f"{resource}/{attributes.subresource}"
    where = f'in the namespace "{attributes.namespace}"' if attributes.namespace else "at the cluster scope"
    reason = (
        f'User "{user.name}" cannot {attributes.verb} resource "{resource}" '
        f'in API group "{attributes.group}" {where}'
    )
    qualified = f"{attributes.resource}.{attributes.group}" if attributes.group else attributes.resource
    if attributes.name:
        return f'{qualified} "{attributes.name}" is forbidden: {reason}'
    return f"{qualified} is forbidden: {reason}"
