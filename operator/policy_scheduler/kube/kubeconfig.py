"""The API client's configuration: the kubeconfig file (argument, else $KUBECONFIG), else the
in-cluster service account, else ~/.kube/config; and what is wrong with it, in one line.

kubernetes-asyncio reads the file; its errors are a YAML parser's traceback, or a ConfigException
("Invalid kube-config file. Expected key current-context in kube-config") that does not say which
file. KubeconfigError names the file and says what to fix.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import yaml
from kubernetes_asyncio import client as k8s_client
from kubernetes_asyncio import config as k8s_config

from policy_scheduler.kube.errors import StartError


class KubeconfigError(StartError):
    """The client configuration cannot be loaded; the message names the file and the problem."""


_EXPECTED_KEY = re.compile(r"Expected key (?P<key>[\w-]+)")
_EXPECTED_NAME = re.compile(r"Expected object with name (?P<name>\S*) in (?:\S*/)?(?P<list>[\w-]+) list")


def _plain(exc: Exception) -> str:
    """kubernetes-asyncio's ConfigException in the kubeconfig's own terms."""
    text = str(exc)
    if match := _EXPECTED_NAME.search(text):
        name = match["name"] or '""'
        return f"no entry named {name} in its {match['list']} list"
    if match := _EXPECTED_KEY.search(text):
        return f"has no {match['key']}"
    return text.removeprefix("Invalid kube-config file. ").strip()


def _check_readable(path: str, origin: str) -> None:
    """A single file that cannot be read, or is not YAML, said so (kubernetes-asyncio would
    carry on with an empty configuration, or raise the parser's traceback)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise KubeconfigError(
            f"kubeconfig {path} ({origin}): cannot read it: {exc.strerror or exc}"
        ) from None
    except UnicodeDecodeError:
        raise KubeconfigError(f"kubeconfig {path} ({origin}): not a text file") from None
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise KubeconfigError(f"kubeconfig {path} ({origin}): not valid YAML{where}: {problem}") from None
    if not isinstance(document, dict):
        raise KubeconfigError(
            f"kubeconfig {path} ({origin}): not a kubeconfig (expected clusters, users, contexts and "
            "current-context)"
        )
    if problem := _dangling_reference(document):
        raise KubeconfigError(f"kubeconfig {path} ({origin}): {problem}")


def _named(document: dict[str, Any], kind: str, name: object) -> dict[str, Any] | None:
    for entry in document.get(kind) or ():
        if isinstance(entry, dict) and entry.get("name") == name:
            body = entry.get(kind.removesuffix("s"))
            return body if isinstance(body, dict) else {}
    return None


def _dangling_reference(document: dict[str, Any]) -> str | None:
    """The current context, and the cluster and user it names, exist (the library fails on a
    missing user with a TypeError)."""
    current = document.get("current-context")
    if not current:
        return None  # the library's "has no current-context"
    context = _named(document, "contexts", current)
    if context is None:
        return f"current-context {current} names no entry in its contexts list"
    for kind in ("cluster", "user"):
        name = context.get(kind)
        if name and _named(document, f"{kind}s", name) is None:
            return f"context {current} names {kind} {name}, which is not in its {kind}s list"
    return None


async def _from_file(path: str, origin: str, configuration: Any) -> None:
    if os.pathsep not in path:  # a list of files ($KUBECONFIG) is merged, missing ones skipped
        _check_readable(path, origin)
    try:
        await k8s_config.load_kube_config(
            config_file=path, client_configuration=configuration, persist_config=False
        )
    except k8s_config.ConfigException as exc:
        raise KubeconfigError(f"kubeconfig {path} ({origin}): {_plain(exc)}") from None
    except (OSError, ValueError, TypeError, AttributeError) as exc:
        # A certificate file it names that cannot be read, bad base64 data, a field of the wrong type.
        raise KubeconfigError(f"kubeconfig {path} ({origin}): {exc}") from None


async def load_configuration(kubeconfig: str | None = None) -> Any:
    """The client configuration; KubeconfigError if there is none to be had."""
    configuration = k8s_client.Configuration()
    if kubeconfig:
        await _from_file(kubeconfig, "--kubeconfig", configuration)
        return configuration
    if path := os.environ.get("KUBECONFIG"):
        await _from_file(path, "$KUBECONFIG", configuration)
        return configuration
    try:
        k8s_config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
    except k8s_config.ConfigException as exc:
        default = Path.home() / ".kube" / "config"
        if not default.exists():
            # Outside a cluster with neither set, ~/.kube/config is tried last so local runs just work.
            raise KubeconfigError(
                f"no cluster to talk to: pass --kubeconfig or set $KUBECONFIG (there is no "
                f"{default}), or run in a pod with a service account ({_plain(exc)})"
            ) from None
        await _from_file(str(default), "default", configuration)
    return configuration
