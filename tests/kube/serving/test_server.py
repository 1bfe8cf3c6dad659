"""Starting the server: one-line errors for what cannot work, plain HTTP on loopback only."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import aiohttp
import pytest

from policy_scheduler.devcluster.hostnet import free_ports
from policy_scheduler.kube.serving.options import ServingError, ServingOptions, ServingOptionsError
from policy_scheduler.kube.serving.server import Server
from tests.no_api import NO_API


@pytest.mark.parametrize("address", ["0.0.0.0", "10.1.2.3", "::", "my-host"])
def test_plain_http_is_refused_off_loopback(address: str) -> None:
    with pytest.raises(ServingOptionsError, match="loopback address only"):
        ServingOptions(insecure_port=8080, insecure_bind_address=address)
    ServingOptions(insecure_port=8080, insecure_bind_address="::1")


def test_a_certificate_needs_its_key(tmp_path: Path) -> None:
    with pytest.raises(ServingOptionsError, match="--tls-cert-file and --tls-private-key-file go together"):
        ServingOptions(tls_cert_file=tmp_path / "tls.crt")


def test_a_port_in_use_is_one_clear_line() -> None:
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    server = Server(NO_API, ServingOptions(secure_port=port, bind_address="127.0.0.1"), lambda: True)
    try:
        with pytest.raises(ServingError) as raised:
            asyncio.run(server.start())
    finally:
        taken.close()
    assert str(raised.value) == (
        f"--secure-port {port} on 127.0.0.1: address already in use (is another policy-scheduler still running?)"
    )


def test_secure_and_development_ports_side_by_side() -> None:
    secure, plain = free_ports(2)
    options = ServingOptions(secure_port=secure, bind_address="127.0.0.1", insecure_port=plain)

    async def scenario() -> tuple[int, int, int]:
        server = Server(NO_API, options, lambda: True)
        await server.start()
        try:
            async with aiohttp.ClientSession() as session:
                async with session.get(f"https://127.0.0.1:{secure}/metrics", ssl=False) as resp:
                    unauthenticated = resp.status
                async with session.get(f"https://127.0.0.1:{secure}/livez", ssl=False) as resp:
                    health = resp.status
                async with session.get(f"http://127.0.0.1:{plain}/metrics") as resp:
                    development = resp.status
        finally:
            await server.stop()
        return unauthenticated, health, development

    assert asyncio.run(scenario()) == (401, 200, 200)
