"""The secure port's certificate: from --tls-cert-file/--tls-private-key-file, re-read when the
files change (a renewed certificate is served without a restart), or self-signed at start as
kube-scheduler does when it is given none. Client certificates are asked for only when a client
CA is configured, and one that CA did not sign fails the handshake."""

from __future__ import annotations

import datetime
import ipaddress
import logging
import os
import socket
import ssl
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

log = logging.getLogger(__name__)

SELF_SIGNED_VALIDITY = datetime.timedelta(days=365)
SELF_SIGNED_PAIR = "policy-scheduler"  # <cert-dir>/policy-scheduler.crt and .key


class CertificateError(Exception):
    """A certificate or key could not be used; the message names the file."""


@dataclass(frozen=True, slots=True)
class KeyPair:
    cert_file: Path
    key_file: Path


def _stamp(pair: KeyPair) -> tuple[float, int, float, int]:
    cert, key = pair.cert_file.stat(), pair.key_file.stat()
    return cert.st_mtime, cert.st_size, key.st_mtime, key.st_size


def _load(context: ssl.SSLContext, pair: KeyPair) -> None:
    try:
        context.load_cert_chain(str(pair.cert_file), str(pair.key_file))
    except (OSError, ssl.SSLError) as exc:
        raise CertificateError(f"{pair.cert_file} / {pair.key_file}: {exc}") from None


def new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def certificate(
    subject: x509.Name,
    key: ec.EllipticCurvePrivateKey,
    *,
    issuer: tuple[x509.Name, ec.EllipticCurvePrivateKey] | None = None,
    alternatives: Sequence[str] = (),
    ca: bool = False,
    usage: Sequence[x509.ObjectIdentifier] = (ExtendedKeyUsageOID.SERVER_AUTH,),
    validity: datetime.timedelta = SELF_SIGNED_VALIDITY,
) -> x509.Certificate:
    """A certificate of `key` for `subject` (DNS names or IPs in `alternatives`), signed by the
    issuer's key, or by its own key when there is no issuer."""
    issuer_name, signing_key = issuer if issuer is not None else (subject, key)
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + validity)
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    names: list[x509.GeneralName] = []
    for name in dict.fromkeys(alternatives):
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            names.append(x509.DNSName(name))
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    if not ca:
        builder = builder.add_extension(x509.ExtendedKeyUsage(list(usage)), critical=False)
    return builder.sign(signing_key, hashes.SHA256())


def self_signed_pem(host: str, addresses: Sequence[str]) -> tuple[bytes, bytes]:
    """A serving certificate for `host` and `addresses`, named `host@<unix time>` as
    kube-scheduler names its self-signed one, and its key."""
    key = new_key()
    stamp = int(datetime.datetime.now(datetime.UTC).timestamp())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{host}@{stamp}")])
    return cert_pem(certificate(subject, key, alternatives=[host, *addresses])), key_pem(key)


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def _self_signed_addresses(bind_address: str) -> list[str]:
    addresses = ["localhost", "127.0.0.1", "::1"]
    if bind_address not in ("0.0.0.0", "::", ""):
        addresses.append(bind_address)
    return addresses


class ServingCertificate:
    """The server's TLS context. Renewed files are served from the next handshake on: each
    handshake picks the newest loaded context (SNI callback), so no live context is changed."""

    def __init__(
        self, pair: KeyPair | None, *, bind_address: str, cert_dir: Path | None, client_ca: Path | None
    ) -> None:
        self.pair = pair
        self.client_ca = client_ca
        self._stamp: tuple[float, int, float, int] | None = None
        if pair is None:
            pair = self._self_sign(bind_address, cert_dir)
            self.current = self._context(pair)
            if cert_dir is None:  # a private temporary directory: gone once loaded
                for path in (pair.cert_file, pair.key_file):
                    path.unlink()
                pair.cert_file.parent.rmdir()
        else:
            self._stamp = _stamp(pair)
            self.current = self._context(pair)
        # The context the listener is created with; every handshake switches to the current one.
        self.context = self.current
        self.context.sni_callback = self._select

    def _select(self, connection: ssl.SSLObject, _server_name: str | None, _context: ssl.SSLContext) -> None:
        if connection.context is not self.current:
            connection.context = self.current

    def _context(self, pair: KeyPair) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        if self.client_ca is not None:
            try:
                context.load_verify_locations(cafile=str(self.client_ca))
            except (OSError, ssl.SSLError) as exc:
                raise CertificateError(f"--client-ca-file {self.client_ca}: {exc}") from None
            context.verify_mode = ssl.CERT_OPTIONAL
        _load(context, pair)
        return context

    def _self_sign(self, bind_address: str, cert_dir: Path | None) -> KeyPair:
        cert_pem, key_pem = self_signed_pem(socket.gethostname(), _self_signed_addresses(bind_address))
        if cert_dir is None:
            # The ssl module loads keys from files only.
            cert_dir = Path(tempfile.mkdtemp(prefix="policy-scheduler-tls-"))
            pair = KeyPair(cert_dir / "tls.crt", cert_dir / "tls.key")
        else:
            cert_dir.mkdir(parents=True, exist_ok=True)
            pair = KeyPair(cert_dir / f"{SELF_SIGNED_PAIR}.crt", cert_dir / f"{SELF_SIGNED_PAIR}.key")
        _write_private(pair.cert_file, cert_pem)
        _write_private(pair.key_file, key_pem)
        log.info("serving a self-signed certificate")
        return pair

    def reload_if_changed(self) -> bool:
        """Load the files again if they changed since the last look; True if the new pair is now
        served. A pair that does not load (half-written, mismatched) leaves the old one, and is
        reported once per change."""
        if self.pair is None:
            return False
        try:
            stamp = _stamp(self.pair)
        except OSError as exc:
            log.warning("serving certificate unreadable; the previous one stays", extra={"error": str(exc)})
            return False
        if stamp == self._stamp:
            return False
        self._stamp = stamp
        try:
            self.current = self._context(self.pair)
        except CertificateError as exc:
            log.warning("serving certificate not reloaded; the previous one stays", extra={"error": str(exc)})
            return False
        log.info("serving certificate reloaded", extra={"cert_file": str(self.pair.cert_file)})
        return True
