"""The secure port's filter chain over real HTTP: 401 without credentials, 403 without access
(the same whether or not the pod exists), health without either, errors fail closed."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from policy_scheduler.kube.serving.authentication import AuthenticationError, DelegatingAuthenticator
from policy_scheduler.kube.serving.authorization import AuthorizationError, DelegatingAuthorizer, PathPatterns
from policy_scheduler.kube.serving.guard import Guard
from policy_scheduler.kube.serving.identity import Attributes, ResourceAttributes, UserInfo
from policy_scheduler.kube.serving.options import DEFAULT_ALWAYS_ALLOW_PATHS
from policy_scheduler.kube.serving.server import make_app
from policy_scheduler.scheduler.diagnosis_recorder import DiagnosisRecorder
from tests.explain.test_explain import PENDING_EXPLANATION

USERS = {
    "admin": UserInfo("admin", groups=("system:masters",)),
    "tenant": UserInfo("tenant", groups=("system:authenticated",)),
    "scraper": UserInfo("scraper", groups=("system:authenticated",)),
}


class Tokens:
    async def review(self, token: str) -> UserInfo | None:
        if token == "broken":
            raise AuthenticationError("TokenReview failed: 500")
        return USERS.get(token)


class Access:
    """tenant may get pods in shop; scraper may get /metrics; `fail` makes reviews error."""

    def __init__(self) -> None:
        self.fail = False
        self.asked: list[Attributes] = []

    async def allowed(self, user: UserInfo, attributes: Attributes) -> bool:
        self.asked.append(attributes)
        if self.fail:
            raise AuthorizationError("SubjectAccessReview failed: timeout")
        if user.name == "tenant":
            return isinstance(attributes, ResourceAttributes) and attributes.namespace == "shop"
        return user.name == "scraper" and getattr(attributes, "path", "") == "/metrics"


def guarded(access: Access) -> Guard:
    return Guard(
        DelegatingAuthenticator(Tokens(), 0.0),
        DelegatingAuthorizer(access, always_allow_groups=["system:masters"], allowed_ttl=0.0, denied_ttl=0.0),
        PathPatterns(DEFAULT_ALWAYS_ALLOW_PATHS),
    )


async def get(access: Access, path: str, token: str | None = None) -> tuple[int, Any]:
    recorder = DiagnosisRecorder()
    recorder._pending.put("shop/web", PENDING_EXPLANATION)
    recorder._pending.put("bank/vault", PENDING_EXPLANATION)
    app = make_app(lambda: True, recorder, guarded(access))
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with TestClient(TestServer(app)) as client:
        resp = await client.get(path, headers=headers)
        body = await resp.json() if resp.content_type == "application/json" else await resp.text()
        return resp.status, body


def run(path: str, token: str | None = None, access: Access | None = None) -> tuple[int, Any]:
    return asyncio.run(get(access or Access(), path, token))


@pytest.mark.parametrize("path", ["/healthz", "/livez", "/readyz"])
def test_health_needs_no_credentials(path: str) -> None:
    assert run(path) == (200, "ok")


@pytest.mark.parametrize("token", [None, "nobody-knows-me"])
@pytest.mark.parametrize("path", ["/metrics", "/debug/explain/shop/web", "/no/such/route"])
def test_no_or_unknown_credentials_are_401(path: str, token: str | None) -> None:
    status, body = run(path, token)
    assert status == 401
    assert (body["kind"], body["reason"], body["code"]) == ("Status", "Unauthorized", 401)


def test_metrics_need_get_on_the_path() -> None:
    assert run("/metrics", "scraper")[0] == 200
    status, body = run("/metrics", "tenant")
    assert (status, body["message"]) == (403, 'forbidden: User "tenant" cannot get path "/metrics"')


def test_a_tenant_sees_only_its_own_namespace_and_learns_nothing_of_others() -> None:
    status, body = run("/debug/explain/shop/web", "tenant")
    assert status == 200
    assert body["namespace"] == "shop"
    assert run("/debug/explain/shop/gone", "tenant")[0] == 404  # allowed to ask: not recorded
    existing = run("/debug/explain/bank/vault", "tenant")
    missing = run("/debug/explain/bank/nothing-here", "tenant")
    assert existing[0] == missing[0] == 403
    assert existing[1]["message"] == (
        'pods "vault" is forbidden: User "tenant" cannot get resource "pods" in API group "" '
        'in the namespace "bank"'
    )
    assert missing[1]["message"] == existing[1]["message"].replace('"vault"', '"nothing-here"')


def test_explaining_is_authorized_as_get_on_that_pod() -> None:
    access = Access()
    run("/debug/explain/shop/web", "tenant", access)
    assert access.asked == [ResourceAttributes(verb="get", resource="pods", namespace="shop", name="web")]


def test_a_path_outside_the_routes_is_checked_before_it_is_found_missing() -> None:
    assert run("/debug/pprof", "tenant")[0] == 403
    assert run("/debug/pprof", "admin")[0] == 404


def test_masters_need_no_review() -> None:
    access = Access()
    assert run("/metrics", "admin", access)[0] == 200
    assert access.asked == []


def test_failed_checks_refuse() -> None:
    assert run("/metrics", "broken")[0] == 401
    access = Access()
    access.fail = True
    status, body = run("/metrics", "scraper", access)
    assert status == 500
    assert "authorization check failed" in body["message"]
