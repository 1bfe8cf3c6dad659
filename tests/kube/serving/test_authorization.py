"""Delegated authorization: always-allowed paths (upstream's path authorizer table), always-allowed
groups, SubjectAccessReview bodies, and the allowed/denied caches."""

from __future__ import annotations

import asyncio

import pytest

from policy_scheduler.kube.serving.authorization import (
    AuthorizationError,
    DelegatingAuthorizer,
    PathPatterns,
    review_body,
)
from policy_scheduler.kube.serving.identity import (
    Attributes,
    PathAttributes,
    ResourceAttributes,
    UserInfo,
    forbidden_message,
)
from tests.fakeclock import FakeClock

# k8s.io/apiserver/pkg/authorization/path/path_test.go TestNewAuthorizer (no path is denied).
PATH_CASES: list[tuple[str, list[str], list[str], list[str], bool]] = [
    ("inner star", ["/foo*bar"], [], [], True),
    ("double star", ["/foo**"], [], [], True),
    ("empty", [], [], ["/"], False),
    ("slash", ["/"], ["/"], ["/foo", "//"], False),
    ("foo", ["/foo"], ["/foo", "foo"], ["/", "", "/bar", "/foo/", "/fooooo", "//foo"], False),
    ("foo slash", ["/foo/"], ["/foo/"], ["/", "", "/bar", "/foo", "/fooooo"], False),
    ("foo slash star", ["/foo/*"], ["/foo/", "/foo/bar/bla"], ["/", "", "/foo", "/bar", "/fooooo"], False),
    ("foo bar", ["/foo", "/bar"], ["/foo", "/bar"], ["/", "", "/foo/", "/bar/", "/fooooo"], False),
    ("foo star", ["/foo*"], ["/foo", "/foooo"], ["/", "", "/fo", "/bar"], False),
    ("star", ["/*"], ["/", "", "/foo", "/foooo"], [], False),
]


@pytest.mark.parametrize(
    ("patterns", "allowed", "no_opinion", "error"),
    [case[1:] for case in PATH_CASES],
    ids=[c[0] for c in PATH_CASES],
)
def test_always_allowed_paths(
    patterns: list[str], allowed: list[str], no_opinion: list[str], error: bool
) -> None:
    if error:
        with pytest.raises(ValueError, match="only a trailing"):
            PathPatterns(patterns)
        return
    paths = PathPatterns(patterns)
    assert [p for p in allowed if not paths.match(p)] == []
    assert [p for p in no_opinion if paths.match(p)] == []


ALICE = UserInfo(
    "alice", uid="u1", groups=("tenants", "system:authenticated"), extra=(("scopes", ("a", "b")),)
)
POD = ResourceAttributes(verb="get", resource="pods", namespace="shop", name="web")
METRICS = PathAttributes(verb="get", path="/metrics")


def test_review_bodies_carry_the_user_and_the_attributes() -> None:
    assert review_body(ALICE, POD)["spec"] == {
        "user": "alice",
        "uid": "u1",
        "groups": ["tenants", "system:authenticated"],
        "extra": {"scopes": ["a", "b"]},
        "resourceAttributes": {
            "verb": "get",
            "group": "",
            "resource": "pods",
            "namespace": "shop",
            "name": "web",
        },
    }
    assert review_body(UserInfo("bob"), METRICS)["spec"] == {
        "user": "bob",
        "groups": [],
        "nonResourceAttributes": {"path": "/metrics", "verb": "get"},
    }


def test_forbidden_messages_are_the_api_servers() -> None:
    assert forbidden_message(ALICE, METRICS) == 'forbidden: User "alice" cannot get path "/metrics"'
    assert forbidden_message(ALICE, POD) == (
        'pods "web" is forbidden: User "alice" cannot get resource "pods" in API group "" in the namespace "shop"'
    )
    lease = ResourceAttributes(verb="get", resource="leases", group="coordination.k8s.io", subresource="x")
    assert forbidden_message(ALICE, lease) == (
        'leases.coordination.k8s.io is forbidden: User "alice" cannot get resource "leases/x" '
        'in API group "coordination.k8s.io" at the cluster scope'
    )


class Reviewer:
    def __init__(self, answers: list[bool | Exception]) -> None:
        self.answers = answers
        self.asked: list[tuple[UserInfo, Attributes]] = []

    async def allowed(self, user: UserInfo, attributes: Attributes) -> bool:
        self.asked.append((user, attributes))
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def authorizer(reviewer: Reviewer, clock: FakeClock) -> DelegatingAuthorizer:
    return DelegatingAuthorizer(
        reviewer, always_allow_groups=["system:masters"], allowed_ttl=10.0, denied_ttl=5.0, clock=clock
    )


def test_masters_are_allowed_without_a_review(fake_clock: FakeClock) -> None:
    reviewer = Reviewer([])
    admin = UserInfo("admin", groups=("system:masters",))
    assert asyncio.run(authorizer(reviewer, fake_clock).authorize(admin, METRICS))
    assert reviewer.asked == []


def test_answers_are_cached_for_their_ttls(fake_clock: FakeClock) -> None:
    reviewer = Reviewer([True, False, False, True])
    authz = authorizer(reviewer, fake_clock)

    async def scenario() -> list[bool]:
        decisions = [await authz.authorize(ALICE, METRICS), await authz.authorize(ALICE, POD)]
        fake_clock.advance(4.9)
        decisions += [await authz.authorize(ALICE, METRICS), await authz.authorize(ALICE, POD)]
        fake_clock.advance(0.1)  # the denial expired, the allowance not yet
        decisions += [await authz.authorize(ALICE, METRICS), await authz.authorize(ALICE, POD)]
        fake_clock.advance(5.0)
        decisions.append(await authz.authorize(ALICE, METRICS))
        return decisions

    assert asyncio.run(scenario()) == [True, False, True, False, True, False, True]
    assert [attributes for _, attributes in reviewer.asked] == [METRICS, POD, POD, METRICS]


def test_a_failed_review_refuses_and_is_not_cached(fake_clock: FakeClock) -> None:
    reviewer = Reviewer([AuthorizationError("timeout"), True])
    authz = authorizer(reviewer, fake_clock)

    async def scenario() -> bool:
        with pytest.raises(AuthorizationError):
            await authz.authorize(ALICE, METRICS)
        return await authz.authorize(ALICE, METRICS)

    assert asyncio.run(scenario())
    assert len(reviewer.asked) == 2
