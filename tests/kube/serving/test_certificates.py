"""The secure port's TLS over real loopback sockets: a self-signed certificate by default, files
re-read when they change (a broken pair keeps the old one), client certificates only from the
configured CA."""

from __future__ import annotations

import asyncio
import os
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from policy_scheduler.devcluster.hostnet import free_ports
from policy_scheduler.kube.serving.certificates import (
    CertificateError,
    KeyPair,
    ServingCertificate,
    cert_pem,
    certificate,
    key_pem,
    new_key,
    self_signed_pem,
)

Authority = tuple[x509.Name, ec.EllipticCurvePrivateKey]


def _ca(name: str) -> tuple[x509.Certificate, Authority]:
    key = new_key()
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    return certificate(subject, key, ca=True), (subject, key)


def _client(authority: Authority, user: str, group: str, directory: Path) -> KeyPair:
    key = new_key()
    subject = x509.Name(
        [x509.NameAttribute(NameOID.ORGANIZATION_NAME, group), x509.NameAttribute(NameOID.COMMON_NAME, user)]
    )
    cert = certificate(subject, key, issuer=authority, usage=[ExtendedKeyUsageOID.CLIENT_AUTH])
    pair = KeyPair(directory / f"{user}.crt", directory / f"{user}.key")
    pair.cert_file.write_bytes(cert_pem(cert))
    pair.key_file.write_bytes(key_pem(key))
    return pair


def _write_pair(directory: Path, host: str) -> KeyPair:
    cert, key = self_signed_pem(host, ["127.0.0.1"])
    pair = KeyPair(directory / "tls.crt", directory / "tls.key")
    pair.cert_file.write_bytes(cert)
    pair.key_file.write_bytes(key)
    return pair


@asynccontextmanager
async def serving(certificate: ServingCertificate) -> AsyncIterator[int]:
    async def whoami(request: web.Request) -> web.Response:
        transport = request.transport
        peercert = transport.get_extra_info("peercert") if transport is not None else None
        subject = dict(item for rdn in (peercert or {}).get("subject", ()) for item in rdn)
        return web.Response(text=subject.get("commonName", "-"))

    app = web.Application()
    app.router.add_get("/", whoami)
    runner = web.AppRunner(app)
    await runner.setup()
    (port,) = free_ports(1)
    await web.TCPSite(runner, "127.0.0.1", port, ssl_context=certificate.context).start()
    try:
        yield port
    finally:
        await runner.cleanup()


async def peer_common_name(port: int, client_cert: KeyPair | None = None) -> tuple[str, str]:
    """(the server certificate's CN, what the server saw of ours)."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    if client_cert is not None:
        context.load_cert_chain(str(client_cert.cert_file), str(client_cert.key_file))
    _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context)
    der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
    writer.close()
    served = x509.load_der_x509_certificate(der).subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"https://127.0.0.1:{port}/", ssl=context) as resp,
    ):
        seen = await resp.text()
    return str(served), seen


def test_self_signed_when_no_files_are_given(tmp_path: Path) -> None:
    certificate = ServingCertificate(None, bind_address="0.0.0.0", cert_dir=tmp_path, client_ca=None)
    pem = (tmp_path / "policy-scheduler.crt").read_bytes()
    assert os.stat(tmp_path / "policy-scheduler.key").st_mode & 0o077 == 0
    names = x509.load_pem_x509_certificate(pem).extensions.get_extension_for_class(
        x509.SubjectAlternativeName
    )
    assert "localhost" in names.value.get_values_for_type(x509.DNSName)

    async def scenario() -> tuple[str, str]:
        async with serving(certificate) as port:
            return await peer_common_name(port)

    served, _ = asyncio.run(scenario())
    assert "@" in served  # host@timestamp, as kube-scheduler names its self-signed certificate


def test_renewed_files_are_served_and_broken_ones_are_not(tmp_path: Path) -> None:
    pair = _write_pair(tmp_path, "first")
    certificate = ServingCertificate(pair, bind_address="0.0.0.0", cert_dir=None, client_ca=None)

    async def scenario() -> list[str]:
        served = []
        async with serving(certificate) as port:
            served.append((await peer_common_name(port))[0])
            assert not certificate.reload_if_changed()  # nothing changed
            _write_pair(tmp_path, "second")
            os.utime(pair.cert_file, (1, 1))  # a different stamp even within the same second
            assert certificate.reload_if_changed()
            served.append((await peer_common_name(port))[0])
            pair.key_file.write_bytes(key_pem(new_key()))  # a key that does not match the certificate
            assert not certificate.reload_if_changed()
            served.append((await peer_common_name(port))[0])
        return served

    first, second, after_broken = asyncio.run(scenario())
    assert first.startswith("first@")
    assert second.startswith("second@")
    assert after_broken == second


def test_client_certificates_only_from_the_client_ca(tmp_path: Path) -> None:
    (trusted_cert, trusted), (_, unknown) = _ca("trusted"), _ca("unknown")
    ca_file = tmp_path / "client-ca.crt"
    ca_file.write_bytes(cert_pem(trusted_cert))
    certificate = ServingCertificate(
        _write_pair(tmp_path, "server"), bind_address="0.0.0.0", cert_dir=None, client_ca=ca_file
    )
    good = _client(trusted, "carol", "ops", tmp_path)
    bad = _client(unknown, "mallory", "ops", tmp_path)

    async def scenario() -> tuple[str, str]:
        async with serving(certificate) as port:
            seen = (await peer_common_name(port, good))[1]
            anonymous = (await peer_common_name(port))[1]
            with pytest.raises((ssl.SSLError, aiohttp.ClientError, ConnectionError)):
                await peer_common_name(port, bad)
            return seen, anonymous

    assert asyncio.run(scenario()) == ("carol", "-")


def test_mismatched_files_are_a_clear_error(tmp_path: Path) -> None:
    pair = _write_pair(tmp_path, "server")
    pair.key_file.write_bytes(key_pem(new_key()))
    with pytest.raises(CertificateError, match=str(pair.cert_file)):
        ServingCertificate(pair, bind_address="0.0.0.0", cert_dir=None, client_ca=None)
