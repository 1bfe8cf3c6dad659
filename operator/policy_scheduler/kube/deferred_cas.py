"""aiohttp's default TLS contexts, with the system's CA certificates loaded after start-up.

`aiohttp.connector` makes two SSLContexts at import and loads the system's CA bundle into each:
about 0.06-0.1 CPU-s before `run` can send its first lists (issue 12). None of our requests
uses them: kubernetes_asyncio and kopf pass contexts of their own (the kubeconfig's CA), and
kubernetes_asyncio's OIDC refresh without a CA uses the unverified one, whose CAs are never
consulted. `import_aiohttp()` imports aiohttp with OpenSSL's default CA file and directory
pointed at nothing; `load()` later loads the real ones into those same contexts, so from then on
a request that relies on aiohttp's default (ssl=True, no context) verifies exactly as before.
"""

from __future__ import annotations

import os
import ssl
import sys
from types import ModuleType

CONNECTOR = "aiohttp.connector"

_deferred: list[ssl.SSLContext] = []


def _ca_variables() -> tuple[str, str]:
    """The environment variables OpenSSL reads for its default CA file and directory."""
    paths = ssl.get_default_verify_paths()
    return paths.openssl_cafile_env, paths.openssl_capath_env


def import_aiohttp() -> bool:
    """Import aiohttp without loading CAs into its default contexts; False (and nothing done) if
    it was imported already. Call it while the process has one thread: it sets the environment."""
    if CONNECTOR in sys.modules:
        return False
    variables = _ca_variables()
    saved = {name: os.environ.get(name) for name in variables}
    for name in variables:
        os.environ[name] = os.devnull  # an empty CA file; as a directory, one that holds nothing
    try:
        import aiohttp.connector as connector
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    _deferred.extend(_contexts(connector))
    return True


def _contexts(module: ModuleType) -> list[ssl.SSLContext]:
    # Every module-level context, whatever aiohttp names it.
    return [value for value in vars(module).values() if isinstance(value, ssl.SSLContext)]


def load() -> None:
    """Load the system's CAs into the contexts `import_aiohttp` left without (once; then a no-op)."""
    while _deferred:
        _deferred.pop().set_default_verify_paths()
