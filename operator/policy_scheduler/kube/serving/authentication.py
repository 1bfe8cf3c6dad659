"""Delegated authentication, as k8s.io/apiserver's DelegatingAuthenticator does it for
kube-scheduler: a client certificate signed by the client CA, else a bearer token checked with
a TokenReview (answers cached for a short TTL, successes and failures alike; errors are not
cached). Anonymous requests are not authenticated: the server answers them 401 except on the
always-allowed paths (docs/differences.md)."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

import msgspec

from policy_scheduler.kube.client import ApiError, request_ok
from policy_scheduler.kube.serving.identity import UserInfo
from policy_scheduler.kube.serving.ttl_cache import TtlCache

if TYPE_CHECKING:
    from policy_scheduler.kube.client import ApiClient

log = logging.getLogger(__name__)

TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
# What `explain` sends through the API server's pods/proxy, which removes the Authorization
# header of the request it forwards (the caller authenticated to the API server, not to us).
FORWARDED_AUTHORIZATION = "X-Forwarded-Authorization"


class AuthenticationError(Exception):
    """The credentials could not be checked (the TokenReview failed): the request is refused."""


class TokenReviewer(Protocol):
    async def review(self, token: str) -> UserInfo | None:
        """The token's user, or None if the API server does not accept it; raises
        AuthenticationError when it cannot tell."""
        ...


class _Status(msgspec.Struct, omit_defaults=True):
    authenticated: bool = False
    user: dict[str, Any] = msgspec.field(default_factory=dict)
    error: str = ""


class _Review(msgspec.Struct):
    status: _Status = msgspec.field(default_factory=_Status)


def user_from_review(user: Mapping[str, Any]) -> UserInfo:
    extra = user.get("extra") or {}
    return UserInfo(
        name=str(user.get("username", "")),
        uid=str(user.get("uid", "")),
        groups=tuple(str(g) for g in user.get("groups") or ()),
        extra=tuple(sorted((str(k), tuple(str(v) for v in values or ())) for k, values in extra.items())),
    )


class ApiTokenReviewer:
    """TokenReviews against the API server, with the operator's own credentials (which need
    `create` on tokenreviews: system:auth-delegator)."""

    def __init__(self, api: ApiClient, timeout: float) -> None:
        self.api = api
        self.timeout = timeout

    async def review(self, token: str) -> UserInfo | None:
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}}
        try:
            data = await request_ok(self.api, "POST", TOKEN_REVIEWS, body=body, request_timeout=self.timeout)
        except (ApiError, OSError, TimeoutError) as exc:
            raise AuthenticationError(f"TokenReview failed: {exc}") from None
        except Exception as exc:  # any transport failure: refuse, never let the request through
            raise AuthenticationError(f"TokenReview failed: {type(exc).__name__}") from None
        status = msgspec.json.decode(data, type=_Review).status
        return user_from_review(status.user) if status.authenticated else None


def bearer_token(headers: Mapping[str, str]) -> str | None:
    """The token of an `Authorization: Bearer ...` header (or the forwarded one), if any."""
    for header in ("Authorization", FORWARDED_AUTHORIZATION):
        value = headers.get(header, "")
        scheme, _, token = value.strip().partition(" ")
        if scheme.lower() == "bearer" and token.strip():
            return token.strip()
    return None


def user_from_certificate(peercert: Mapping[str, Any]) -> UserInfo | None:
    """The user of a verified client certificate, as the API server's x509 authenticator reads
    it: the subject's common name, and its organizations as groups."""
    name = ""
    groups: list[str] = []
    for rdn in peercert.get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                name = value
            elif key == "organizationName":
                groups.append(value)
    return UserInfo(name=name, groups=tuple(groups)) if name else None


class DelegatingAuthenticator:
    def __init__(
        self,
        reviewer: TokenReviewer,
        cache_ttl: float,
        *,
        in_flight: int = 16,
        cache_size: int = 4096,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.reviewer = reviewer
        self.cache_ttl = cache_ttl
        # Reviews at once; more wait, so a flood of new tokens cannot flood the API server.
        self.in_flight = asyncio.Semaphore(in_flight)
        # Keyed by the token's digest: the tokens themselves are not kept.
        self.cache: TtlCache[bytes, UserInfo | None] = TtlCache(cache_size, clock)

    async def authenticate(
        self, headers: Mapping[str, str], peercert: Mapping[str, Any] | None
    ) -> UserInfo | None:
        """The request's user; None when it brings no credentials or ones that are not accepted.
        Raises AuthenticationError when a token could not be checked."""
        if peercert:
            user = user_from_certificate(peercert)
            if user is not None:
                return user
        token = bearer_token(headers)
        if token is None:
            return None
        key = hashlib.sha256(token.encode()).digest()
        found, cached = self.cache.get(key)
        if found:
            return cached
        async with self.in_flight:
            found, cached = self.cache.get(key)  # answered while this request waited
            if found:
                return cached
            user = await self.reviewer.review(token)
        self.cache.put(key, user, self.cache_ttl)
        return user
