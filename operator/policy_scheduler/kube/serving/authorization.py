"""Delegated authorization, as k8s.io/apiserver's DelegatingAuthorizer does it for
kube-scheduler: always-allowed paths and groups first, else a SubjectAccessReview (allowed and
denied answers cached for their TTLs; errors are not cached and refuse the request)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Protocol

import msgspec

from policy_scheduler.kube.client import ApiError, request_ok
from policy_scheduler.kube.serving.identity import Attributes, PathAttributes, UserInfo
from policy_scheduler.kube.serving.ttl_cache import TtlCache

if TYPE_CHECKING:
    from policy_scheduler.kube.client import ApiClient

SUBJECT_ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"


class AuthorizationError(Exception):
    """The access could not be checked (the SubjectAccessReview failed): the request is refused."""


class AccessReviewer(Protocol):
    async def allowed(self, user: UserInfo, attributes: Attributes) -> bool:
        """Whether the API server allows it; raises AuthorizationError when it cannot tell."""
        ...


class _Status(msgspec.Struct):
    allowed: bool = False


class _Review(msgspec.Struct):
    status: _Status = msgspec.field(default_factory=_Status)


def review_body(user: UserInfo, attributes: Attributes) -> dict[str, Any]:
    spec: dict[str, Any] = {"user": user.name, "groups": list(user.groups)}
    if user.uid:
        spec["uid"] = user.uid
    if user.extra:
        spec["extra"] = {key: list(values) for key, values in user.extra}
    if isinstance(attributes, PathAttributes):
        spec["nonResourceAttributes"] = {"path": attributes.path, "verb": attributes.verb}
    else:
        resource: dict[str, str] = {
            "verb": attributes.verb,
            "group": attributes.group,
            "resource": attributes.resource,
        }
        for key, value in (
            ("namespace", attributes.namespace),
            ("name", attributes.name),
            ("subresource", attributes.subresource),
        ):
            if value:
                resource[key] = value
        spec["resourceAttributes"] = resource
    return {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}


class ApiAccessReviewer:
    """SubjectAccessReviews against the API server (the operator needs `create` on them:
    system:auth-delegator)."""

    def __init__(self, api: ApiClient, timeout: float) -> None:
        self.api = api
        self.timeout = timeout

    async def allowed(self, user: UserInfo, attributes: Attributes) -> bool:
        body = review_body(user, attributes)
        try:
            data = await request_ok(
                self.api, "POST", SUBJECT_ACCESS_REVIEWS, body=body, request_timeout=self.timeout
            )
        except (ApiError, OSError, TimeoutError) as exc:
            raise AuthorizationError(f"SubjectAccessReview failed: {exc}") from None
        except Exception as exc:  # any transport failure: refuse
            raise AuthorizationError(f"SubjectAccessReview failed: {type(exc).__name__}") from None
        return msgspec.json.decode(data, type=_Review).status.allowed


class PathPatterns:
    """`--authorization-always-allow-paths`: exact paths, or prefixes written with a trailing `*`
    (k8s.io/apiserver's path authorizer)."""

    def __init__(self, patterns: Iterable[str]) -> None:
        self.exact: set[str] = set()
        self.prefixes: list[str] = []
        for pattern in patterns:
            trimmed = pattern.removeprefix("/")
            if "*" in trimmed[:-1]:
                raise ValueError(f"only a trailing * is allowed in {pattern!r}")
            if trimmed.endswith("*"):
                self.prefixes.append(trimmed[:-1])
            else:
                self.exact.add(trimmed)

    def match(self, path: str) -> bool:
        trimmed = path.removeprefix("/")
        return trimmed in self.exact or any(trimmed.startswith(prefix) for prefix in self.prefixes)


class DelegatingAuthorizer:
    def __init__(
        self,
        reviewer: AccessReviewer,
        *,
        always_allow_groups: Iterable[str],
        allowed_ttl: float,
        denied_ttl: float,
        in_flight: int = 16,
        cache_size: int = 4096,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.reviewer = reviewer
        self.always_allow_groups = frozenset(always_allow_groups)
        self.allowed_ttl = allowed_ttl
        self.denied_ttl = denied_ttl
        self.cache: TtlCache[tuple[UserInfo, Attributes], bool] = TtlCache(cache_size, clock)
        self.in_flight = asyncio.Semaphore(in_flight)

    async def authorize(self, user: UserInfo, attributes: Attributes) -> bool:
        """Raises AuthorizationError when the API server could not be asked."""
        if self.always_allow_groups.intersection(user.groups):
            return True
        key = (user, attributes)
        found, cached = self.cache.get(key)
        if found:
            return bool(cached)
        async with self.in_flight:
            found, cached = self.cache.get(key)  # answered while this request waited
            if found:
                return bool(cached)
            allowed = await self.reviewer.allowed(user, attributes)
        self.cache.put(key, allowed, self.allowed_ttl if allowed else self.denied_ttl)
        return allowed
