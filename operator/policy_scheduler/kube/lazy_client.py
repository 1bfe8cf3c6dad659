"""kubernetes_asyncio imported for what we use of it, the rest on first use.

Importing `kubernetes_asyncio.config` (our client's config loading) runs the package's
`__init__`, which imports every subpackage; their generated `__init__` modules import every API
and model class (about 1500 modules, 0.15-0.2 CPU-s at start, issue 12), and kopf imports
`kubernetes_asyncio.client` whatever we do (`kopf/_cogs/helpers/thirdparty.py`). We use a
handful of names (Configuration, ApiClient, the config loaders). `install()` changes when
those imports run, never what they give:

- `client`, `client.api` and `client.models` resolve each `from <package>.<module> import
  <Name>` of their `__init__` on first access instead (PEP 562 module `__getattr__`); every other
  statement of the `__init__` runs as written.
- the subpackages we never use on the way to the first bind (`dynamic`, `stream`, `utils`,
  `watch`) and urllib3 (which `client.configuration` imports for the basic-auth header only) are
  executed on first attribute access (`importlib.util.LazyLoader`).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import re
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import Any

LAZY_PACKAGES = frozenset(
    {"kubernetes_asyncio.client", "kubernetes_asyncio.client.api", "kubernetes_asyncio.client.models"}
)
LAZY_MODULES = frozenset(
    {
        "kubernetes_asyncio.dynamic",
        "kubernetes_asyncio.stream",
        "kubernetes_asyncio.utils",
        "kubernetes_asyncio.watch",
        "urllib3",
    }
)

# One top-level `from <module> import <name> [as <alias>]` statement on a line of its own, as the
# generated `__init__` modules write them. Scanning lines costs ~1 ms where parsing the modules
# cost ~45 ms per start; anything else (indented, parenthesised, continued) is kept as written.
_FROM_IMPORT = re.compile(r"from ([\w.]+) import (\w+)(?: as (\w+))?[ \t]*(?:#.*)?")


class _LazyInitLoader(importlib.abc.Loader):
    def __init__(self, origin: str) -> None:
        self.origin = origin

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None  # the default module object

    def exec_module(self, module: ModuleType) -> None:
        with open(self.origin, encoding="utf-8") as handle:
            lines = handle.read().split("\n")
        deferred: dict[str, tuple[str, str]] = {}
        prefix = module.__name__ + "."
        for number, line in enumerate(lines):
            match = _FROM_IMPORT.fullmatch(line)
            if match is not None and match[1].startswith(prefix):
                deferred[match[3] or match[2]] = (match[1], match[2])
                lines[number] = ""  # an empty line keeps the line numbers of tracebacks
        exec(compile("\n".join(lines), self.origin, "exec"), module.__dict__)

        def __getattr__(name: str) -> Any:
            try:
                source, attr = deferred[name]
            except KeyError:
                raise AttributeError(f"module {module.__name__!r} has no attribute {name!r}") from None
            value = getattr(importlib.import_module(source), attr)
            setattr(module, name, value)  # later lookups skip this function
            return value

        module.__getattr__ = __getattr__  # type: ignore[method-assign]


class _LazyFinder(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in LAZY_PACKAGES and fullname not in LAZY_MODULES:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.origin is None or spec.loader is None:
            return None
        if fullname in LAZY_MODULES:
            spec.loader = importlib.util.LazyLoader(spec.loader)
        elif spec.origin.endswith("__init__.py"):
            spec.loader = _LazyInitLoader(spec.origin)
        # else: not the layout this was written for, the normal import
        return spec


def install() -> None:
    """Before the first import of kubernetes_asyncio (a no-op for modules already imported)."""
    if not any(isinstance(finder, _LazyFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _LazyFinder())
