"""The dev cluster's credentials: the admin token, the service-account key pair, the kubeconfig."""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from policy_scheduler.devcluster.errors import DevClusterError

ADMIN_USER = "admin"
CONTEXT_NAME = "policy-scheduler-dev"


def kubeconfig_document(server: str, token: str, ca_pem: bytes) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": CONTEXT_NAME,
                "cluster": {
                    "server": server,
                    "certificate-authority-data": base64.b64encode(ca_pem).decode(),
                },
            }
        ],
        "users": [{"name": ADMIN_USER, "user": {"token": token}}],
        "contexts": [{"name": CONTEXT_NAME, "context": {"cluster": CONTEXT_NAME, "user": ADMIN_USER}}],
        "current-context": CONTEXT_NAME,
    }


def write_private(path: Path, text: str) -> None:
    """Write a file readable only by its owner, atomically (readers never see half of it)."""
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    tmp.replace(path)


def write_token_file(pki_dir: Path, token: str) -> None:
    """The API server's static token file: `token` authenticates the admin as system:masters."""
    write_private(pki_dir / "tokens.csv", f'{token},{ADMIN_USER},{ADMIN_USER},"system:masters"\n')


def ensure_service_account_keys(pki_dir: Path) -> None:
    """The key pair the API server signs and checks service-account tokens with (kept across starts)."""
    key, pub = pki_dir / "sa.key", pki_dir / "sa.pub"
    if key.is_file() and pub.is_file():
        return
    openssl = shutil.which("openssl")
    if openssl is None:
        raise DevClusterError("the `openssl` command is needed to create the service-account key pair")
    for cmd in (
        [openssl, "genrsa", "-out", str(key), "2048"],
        [openssl, "rsa", "-in", str(key), "-pubout", "-out", str(pub)],
    ):
        result = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise DevClusterError(f"{' '.join(cmd)} failed: {result.stderr.strip()}")
