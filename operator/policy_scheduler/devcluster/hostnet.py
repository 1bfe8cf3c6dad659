"""Host networking facts the control plane needs: free loopback ports and an advertise address."""

from __future__ import annotations

import contextlib
import ipaddress
import os
import shutil
import socket
import subprocess
from pathlib import Path

LOOPBACK = "127.0.0.1"
ADVERTISE_ENV = "POLICY_SCHEDULER_ADVERTISE_ADDRESS"


class HostNetworkError(RuntimeError):
    """The machine's network setup cannot host the control plane; the message says why."""


def free_ports(count: int) -> list[int]:
    """Ask the kernel for `count` distinct free TCP ports on loopback.

    All sockets stay open until every port is chosen so the kernel cannot hand out the
    same port twice; a small race with other programs remains until the components bind.
    """
    with contextlib.ExitStack() as stack:
        ports = []
        for _ in range(count):
            sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            sock.bind((LOOPBACK, 0))
            ports.append(int(sock.getsockname()[1]))
        return ports


def has_ipv4_default_route(route_table: Path = Path("/proc/net/route")) -> bool:
    """True when the kernel routing table has an IPv4 default route (destination 0.0.0.0)."""
    try:
        lines = route_table.read_text().splitlines()[1:]
    except OSError:
        return False
    return any(len(fields) > 1 and fields[1] == "00000000" for fields in (line.split() for line in lines))


def parse_ip_addr_output(text: str) -> list[str]:
    """Extract the IPv4 addresses from `ip -4 -o addr` output, loopback ones excluded."""
    found = []
    for line in text.splitlines():
        fields = line.split()
        if "inet" not in fields:
            continue
        cidr = fields[fields.index("inet") + 1]
        address = ipaddress.IPv4Interface(cidr).ip
        if not address.is_loopback:
            found.append(str(address))
    return found


def _non_loopback_ipv4() -> list[str]:
    ip_cli = shutil.which("ip") or ("/usr/sbin/ip" if Path("/usr/sbin/ip").exists() else None)
    if ip_cli is not None:
        result = subprocess.run([ip_cli, "-4", "-o", "addr"], capture_output=True, text=True, check=False)
        if result.returncode == 0:
            return parse_ip_addr_output(result.stdout)
    # Without iproute2, the addresses the host name resolves to are the best remaining hint.
    with contextlib.suppress(OSError):
        infos = socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET)
        return [str(i[4][0]) for i in infos if not ipaddress.IPv4Address(i[4][0]).is_loopback]
    return []


def advertise_address() -> str | None:
    """The --advertise-address kube-apiserver needs, or None when it can work it out itself.

    kube-apiserver never advertises a loopback address: with --bind-address=127.0.0.1 it
    picks the address of the interface holding the default route, and fails to start when
    there is none. The address only ends up in the `kubernetes` Service endpoints, so any
    local non-loopback IPv4 address will do.
    """
    override = os.environ.get(ADVERTISE_ENV)
    if override:
        return override
    if has_ipv4_default_route():
        return None
    candidates = _non_loopback_ipv4()
    if candidates:
        return candidates[0]
    raise HostNetworkError(
        "kube-apiserver needs a non-loopback IPv4 address to advertise, but this machine has "
        "no default route and no non-loopback IPv4 address. Add one (for example "
        "`ip addr add 10.255.255.1/32 dev lo`) or set "
        f"{ADVERTISE_ENV}=<some IPv4 address> (it does not need to be reachable)."
    )
