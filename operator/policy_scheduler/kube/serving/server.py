"""The operator's HTTPS server (kube-scheduler's secure port) and, for local development only,
a plain HTTP port on loopback."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aiohttp import web

from policy_scheduler.kube.serving.authentication import ApiTokenReviewer, DelegatingAuthenticator
from policy_scheduler.kube.serving.authorization import ApiAccessReviewer, DelegatingAuthorizer, PathPatterns
from policy_scheduler.kube.serving.certificates import KeyPair, ServingCertificate
from policy_scheduler.kube.serving.guard import Guard
from policy_scheduler.kube.serving.options import ServingError, ServingOptions
from policy_scheduler.kube.serving.routes import ACCESS, Placement, Standing, add_routes
from policy_scheduler.scheduler.diagnosis_recorder import DiagnosisRecorder

if TYPE_CHECKING:
    from policy_scheduler.kube.client import ApiClient

log = logging.getLogger(__name__)


def make_app(
    ready: Callable[[], bool],
    recorder: DiagnosisRecorder | None,
    guard: Guard | None,
    standing: Standing | None = None,
    placement: Placement | None = None,
) -> web.Application:
    app = web.Application(middlewares=[guard.middleware] if guard is not None else [])
    app[ACCESS] = {}
    add_routes(app, ready, recorder, standing, placement)
    return app


def make_guard(api: ApiClient, options: ServingOptions) -> Guard:
    authenticator = DelegatingAuthenticator(
        ApiTokenReviewer(api, options.review_timeout),
        options.token_cache_ttl,
        in_flight=options.reviews_in_flight,
    )
    authorizer = DelegatingAuthorizer(
        ApiAccessReviewer(api, options.review_timeout),
        always_allow_groups=options.always_allow_groups,
        allowed_ttl=options.authorized_cache_ttl,
        denied_ttl=options.unauthorized_cache_ttl,
        in_flight=options.reviews_in_flight,
    )
    return Guard(authenticator, authorizer, PathPatterns(options.always_allow_paths))


async def _start_site(runner: web.AppRunner, host: str, port: int, flag: str, **ssl: Any) -> None:
    try:
        await web.TCPSite(runner, host, port, **ssl).start()
    except OSError as exc:
        what = "address already in use" if exc.errno == errno.EADDRINUSE else (exc.strerror or str(exc))
        hint = " (is another policy-scheduler still running?)" if exc.errno == errno.EADDRINUSE else ""
        raise ServingError(f"{flag} {port} on {host}: {what}{hint}") from None


class Server:
    """Started with `start`, stopped with `stop`; re-reads certificate files while it runs."""

    def __init__(
        self,
        api: ApiClient,
        options: ServingOptions,
        ready: Callable[[], bool],
        recorder: DiagnosisRecorder | None = None,
        standing: Standing | None = None,
        placement: Placement | None = None,
    ) -> None:
        self.api = api
        self.options = options
        self.ready = ready
        self.recorder = recorder
        self.standing = standing
        self.placement = placement
        self.certificate: ServingCertificate | None = None
        self._runners: list[web.AppRunner] = []
        self._reload: asyncio.Task[None] | None = None

    async def start(self) -> None:
        options = self.options
        if options.secure_port:
            pair = None
            if options.tls_cert_file is not None and options.tls_private_key_file is not None:
                pair = KeyPair(options.tls_cert_file, options.tls_private_key_file)
            self.certificate = ServingCertificate(
                pair,
                bind_address=options.bind_address,
                cert_dir=options.cert_dir,
                client_ca=options.client_ca_file,
            )
            app = make_app(
                self.ready, self.recorder, make_guard(self.api, options), self.standing, self.placement
            )
            await self._serve(
                app,
                options.bind_address,
                options.secure_port,
                "--secure-port",
                ssl_context=self.certificate.context,
            )
            if pair is not None:
                self._reload = asyncio.create_task(self._reload_loop(), name="serving-certificate")
        if options.insecure_port:
            log.warning(
                "plain HTTP without authentication on loopback (development only)",
                extra={"address": options.insecure_bind_address, "port": options.insecure_port},
            )
            app = make_app(self.ready, self.recorder, None, self.standing, self.placement)
            await self._serve(app, options.insecure_bind_address, options.insecure_port, "--insecure-port")

    async def _serve(self, app: web.Application, host: str, port: int, flag: str, **ssl: Any) -> None:
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        self._runners.append(runner)
        try:
            await _start_site(runner, host, port, flag, **ssl)
        except ServingError:
            await self.stop()
            raise

    async def _reload_loop(self) -> None:
        assert self.certificate is not None
        while True:
            await asyncio.sleep(self.options.cert_reload_interval)
            self.certificate.reload_if_changed()

    async def stop(self) -> None:
        if self._reload is not None:
            self._reload.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reload
            self._reload = None
        while self._runners:
            await self._runners.pop().cleanup()
