"""The secure port's options, named as kube-scheduler's (k8s.io/apiserver's secure serving and
delegating authentication/authorization options), with its defaults."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from pathlib import Path

from policy_scheduler.kube.errors import StartError

DEFAULT_ALWAYS_ALLOW_PATHS = ("/healthz", "/readyz", "/livez")
DEFAULT_ALWAYS_ALLOW_GROUPS = ("system:masters",)


class ServingOptionsError(ValueError):
    """A serving option that cannot work; the message names the flag."""


class ServingError(StartError):
    """The server could not start; the message says why in one line."""


@dataclass(frozen=True, slots=True)
class ServingOptions:
    secure_port: int = 10259  # 0: no server at all
    bind_address: str = "0.0.0.0"
    tls_cert_file: Path | None = None
    tls_private_key_file: Path | None = None
    cert_dir: Path | None = None  # where a self-signed pair is written (default: not kept)
    client_ca_file: Path | None = None
    always_allow_paths: tuple[str, ...] = DEFAULT_ALWAYS_ALLOW_PATHS
    always_allow_groups: tuple[str, ...] = DEFAULT_ALWAYS_ALLOW_GROUPS
    token_cache_ttl: float = 10.0  # --authentication-token-webhook-cache-ttl
    authorized_cache_ttl: float = 10.0  # --authorization-webhook-cache-authorized-ttl
    unauthorized_cache_ttl: float = 10.0  # --authorization-webhook-cache-unauthorized-ttl
    review_timeout: float = 10.0  # TokenReview and SubjectAccessReview requests
    reviews_in_flight: int = 16  # more wait: a flood of new tokens cannot flood the API server
    cert_reload_interval: float = 10.0
    # Plain HTTP without authentication, for local development only: loopback addresses only.
    insecure_port: int = 0
    insecure_bind_address: str = "127.0.0.1"

    def __post_init__(self) -> None:
        if (self.tls_cert_file is None) != (self.tls_private_key_file is None):
            raise ServingOptionsError("--tls-cert-file and --tls-private-key-file go together")
        if self.insecure_port:
            try:
                loopback = ipaddress.ip_address(self.insecure_bind_address).is_loopback
            except ValueError:
                loopback = False
            if not loopback:
                raise ServingOptionsError(
                    f"--insecure-bind-address {self.insecure_bind_address}: the plain HTTP port has no "
                    "authentication and is served on a loopback address only (127.0.0.1 or ::1)"
                )
