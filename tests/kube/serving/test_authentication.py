"""Delegated authentication: bearer tokens (the forwarded header too), client certificates,
TokenReview answers cached for their TTL, failures refusing, tokens never logged."""

from __future__ import annotations

import asyncio
import logging

import pytest

from policy_scheduler.kube.serving.authentication import (
    FORWARDED_AUTHORIZATION,
    AuthenticationError,
    DelegatingAuthenticator,
    bearer_token,
    user_from_certificate,
    user_from_review,
)
from policy_scheduler.kube.serving.identity import UserInfo
from tests.fakeclock import FakeClock

SECRET = "s3cr3t-token-value"


@pytest.mark.parametrize(
    ("headers", "token"),
    [
        ({"Authorization": f"Bearer {SECRET}"}, SECRET),
        ({"Authorization": f"bearer   {SECRET} "}, SECRET),
        ({FORWARDED_AUTHORIZATION: f"Bearer {SECRET}"}, SECRET),
        ({"Authorization": "Basic dXNlcjpwYXNz"}, None),
        ({"Authorization": "Bearer "}, None),
        ({}, None),
    ],
)
def test_bearer_tokens(headers: dict[str, str], token: str | None) -> None:
    assert bearer_token(headers) == token


def test_a_certificates_user_is_its_common_name_and_groups_its_organizations() -> None:
    subject = ((("organizationName", "ops"),), (("organizationName", "sre"),), (("commonName", "carol"),))
    assert user_from_certificate({"subject": subject}) == UserInfo("carol", groups=("ops", "sre"))
    assert user_from_certificate({"subject": ((("organizationName", "ops"),),)}) is None


def test_a_review_names_the_user_with_its_groups_and_extra() -> None:
    user = {"username": "system:serviceaccount:a:b", "uid": "7", "groups": ["g"], "extra": {"k": ["v"]}}
    assert user_from_review(user) == UserInfo("system:serviceaccount:a:b", "7", ("g",), (("k", ("v",)),))


class Reviewer:
    def __init__(self, answers: list[UserInfo | Exception | None]) -> None:
        self.answers = answers
        self.asked = 0

    async def review(self, token: str) -> UserInfo | None:
        self.asked += 1
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def test_answers_are_cached_for_the_ttl_successes_and_refusals_alike(fake_clock: FakeClock) -> None:
    alice = UserInfo("alice")
    reviewer = Reviewer([alice, None, alice])
    authn = DelegatingAuthenticator(reviewer, 10.0, clock=fake_clock)
    good = {"Authorization": "Bearer good"}
    bad = {"Authorization": "Bearer bad"}

    async def scenario() -> list[UserInfo | None]:
        users = [await authn.authenticate(good, None), await authn.authenticate(bad, None)]
        fake_clock.advance(9.0)
        users += [await authn.authenticate(good, None), await authn.authenticate(bad, None)]
        fake_clock.advance(1.0)
        users.append(await authn.authenticate(good, None))
        return users

    assert asyncio.run(scenario()) == [alice, None, alice, None, alice]
    assert reviewer.asked == 3


def test_no_credentials_is_no_user_without_a_review(fake_clock: FakeClock) -> None:
    reviewer = Reviewer([])
    authn = DelegatingAuthenticator(reviewer, 10.0, clock=fake_clock)
    assert asyncio.run(authn.authenticate({}, None)) is None
    assert reviewer.asked == 0


def test_a_verified_client_certificate_needs_no_review(fake_clock: FakeClock) -> None:
    reviewer = Reviewer([])
    authn = DelegatingAuthenticator(reviewer, 10.0, clock=fake_clock)
    cert = {"subject": ((("commonName", "carol"),),)}
    assert asyncio.run(authn.authenticate({"Authorization": "Bearer x"}, cert)) == UserInfo("carol")
    assert reviewer.asked == 0


def test_a_failed_review_is_an_error_and_not_cached(
    fake_clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    alice = UserInfo("alice")
    reviewer = Reviewer([AuthenticationError("TokenReview failed: 503"), alice])
    authn = DelegatingAuthenticator(reviewer, 10.0, clock=fake_clock)
    headers = {"Authorization": f"Bearer {SECRET}"}

    async def scenario() -> UserInfo | None:
        with caplog.at_level(logging.DEBUG), pytest.raises(AuthenticationError):
            await authn.authenticate(headers, None)
        return await authn.authenticate(headers, None)

    assert asyncio.run(scenario()) == alice
    assert SECRET not in caplog.text


def test_concurrent_requests_with_one_new_token_share_one_review(fake_clock: FakeClock) -> None:
    alice = UserInfo("alice")
    reviewer = Reviewer([alice])
    authn = DelegatingAuthenticator(reviewer, 10.0, in_flight=1, clock=fake_clock)

    async def scenario() -> list[UserInfo | None]:
        headers = {"Authorization": "Bearer same"}
        return list(await asyncio.gather(*(authn.authenticate(headers, None) for _ in range(5))))

    assert asyncio.run(scenario()) == [alice] * 5
    assert reviewer.asked == 1
