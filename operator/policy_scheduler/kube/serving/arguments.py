"""`policy-scheduler run`'s serving flags, named and defaulted as kube-scheduler's."""

from __future__ import annotations

import argparse
from pathlib import Path

from policy_scheduler.kube.serving.options import DEFAULT_ALWAYS_ALLOW_PATHS, ServingOptions


def _paths(value: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in value.split(",") if part.strip())


def add_serving_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("secure serving (as kube-scheduler's)")
    group.add_argument(
        "--secure-port",
        type=int,
        default=10259,
        help="HTTPS port of /metrics, /healthz, /livez, /readyz and /debug/explain (0: no server)",
    )
    group.add_argument("--bind-address", default="0.0.0.0", help="address of the secure port")
    group.add_argument(
        "--tls-cert-file", type=Path, help="serving certificate (default: self-signed at start)"
    )
    group.add_argument("--tls-private-key-file", type=Path, help="the serving certificate's key")
    group.add_argument(
        "--cert-dir", type=Path, help="where a self-signed certificate is written (default: kept nowhere)"
    )
    group.add_argument(
        "--client-ca-file", type=Path, help="accept client certificates signed by this CA (default: none)"
    )
    group.add_argument(
        "--authorization-always-allow-paths",
        type=_paths,
        default=DEFAULT_ALWAYS_ALLOW_PATHS,
        help="paths served without authentication or authorization (default: /healthz,/readyz,/livez)",
    )
    group.add_argument(
        "--authentication-token-webhook-cache-ttl", type=float, default=10.0, metavar="SECONDS"
    )
    group.add_argument(
        "--authorization-webhook-cache-authorized-ttl", type=float, default=10.0, metavar="SECONDS"
    )
    group.add_argument(
        "--authorization-webhook-cache-unauthorized-ttl", type=float, default=10.0, metavar="SECONDS"
    )
    group.add_argument(
        "--insecure-port",
        type=int,
        default=0,
        help="DEVELOPMENT ONLY: also serve plain HTTP without authentication on --insecure-bind-address",
    )
    group.add_argument("--insecure-bind-address", default="127.0.0.1", help="a loopback address only")


def serving_options(args: argparse.Namespace) -> ServingOptions:
    return ServingOptions(
        secure_port=args.secure_port,
        bind_address=args.bind_address,
        tls_cert_file=args.tls_cert_file,
        tls_private_key_file=args.tls_private_key_file,
        cert_dir=args.cert_dir,
        client_ca_file=args.client_ca_file,
        always_allow_paths=tuple(args.authorization_always_allow_paths),
        token_cache_ttl=args.authentication_token_webhook_cache_ttl,
        authorized_cache_ttl=args.authorization_webhook_cache_authorized_ttl,
        unauthorized_cache_ttl=args.authorization_webhook_cache_unauthorized_ttl,
        insecure_port=args.insecure_port,
        insecure_bind_address=args.insecure_bind_address,
    )
