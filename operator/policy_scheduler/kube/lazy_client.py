"""Lazy attributes for kubernetes_asyncio's generated `client`, `client.api` and `client.models`.

Their `__init__` modules import every generated API and model class (about 1500 modules,
0.15-0.2 CPU-s at start, issue 12), and kopf imports `kubernetes_asyncio.client` whatever we do
(`kopf/_cogs/helpers/thirdparty.py`). We use a handful of them (Configuration, ApiClient, and
the Lease classes of leader election). `install()` makes those three packages resolve each
`from <package>.<module> import <Name>` of their `__init__` on first access instead (PEP 562
module `__getattr__`); every other statement of the `__init__` runs as written. Names,
`__all__` and behaviour stay the same, only the time of import moves.
"""

from __future__ import annotations

import ast
import importlib
import importlib.abc
import importlib.machinery
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import Any

LAZY_PACKAGES = frozenset(
    {"kubernetes_asyncio.client", "kubernetes_asyncio.client.api", "kubernetes_asyncio.client.models"}
)


class _LazyInitLoader(importlib.abc.Loader):
    def __init__(self, origin: str) -> None:
        self.origin = origin

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None  # the default module object

    def exec_module(self, module: ModuleType) -> None:
        with open(self.origin, "rb") as handle:
            tree = ast.parse(handle.read(), self.origin)
        deferred: dict[str, tuple[str, str]] = {}
        kept: list[ast.stmt] = []
        prefix = module.__name__ + "."
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module is not None:
                module_name = node.module
            else:
                module_name = ""
            if isinstance(node, ast.ImportFrom) and module_name.startswith(prefix):
                for alias in node.names:
                    if alias.name == "*":
                        break
                    deferred[alias.asname or alias.name] = (module_name, alias.name)
                else:
                    continue
            kept.append(node)
        exec(compile(ast.Module(body=kept, type_ignores=[]), self.origin, "exec"), module.__dict__)

        def __getattr__(name: str) -> Any:
            try:
                source, attr = deferred[name]
            except KeyError:
                raise AttributeError(f"module {module.__name__!r} has no attribute {name!r}") from None
            value = getattr(importlib.import_module(source), attr)
            setattr(module, name, value)  # later lookups skip this function
            return value

        module.__getattr__ = __getattr__  # type: ignore[method-assign]


class _LazyInitFinder(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in LAZY_PACKAGES:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.origin is None or not spec.origin.endswith("__init__.py"):
            return None  # not the layout this was written for: the normal import
        spec.loader = _LazyInitLoader(spec.origin)
        return spec


def install() -> None:
    """Before the first import of kubernetes_asyncio (a no-op for packages already imported)."""
    if not any(isinstance(finder, _LazyInitFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _LazyInitFinder())
