"""The code of dataclasses' generated methods, kept from one start to the next (issue 12).

On Python 3.11 `@dataclass` writes each method it generates (`__init__`, `__repr__`, `__eq__`,
the frozen `__setattr__`, ...) as source text and compiles that text: about 850 compiles for the
dataclasses `run` imports, 0.1 CPU-s or more of every start, before the first bind. The text
depends only on the class's fields and options, so what it compiles to can be kept as a .pyc
keeps a module's code: `install()` has dataclasses look the text up in a cache file next to our
bytecode before compiling it, and `save()` writes back the code this process used. A cached
code object is what `compile` returns for exactly that text, so classes come out the same; a
missing, unreadable or stale cache only means compiling as before. On other Python versions
nothing is installed (3.13 compiles a class's methods in one go anyway).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import marshal
import os
import sys
from pathlib import Path
from types import CodeType
from typing import Any

log = logging.getLogger(__name__)

CACHE_FILE = Path(__file__).parent / "__pycache__" / f"dataclass-code.{sys.implementation.cache_tag}.marshal"
SUPPORTED = sys.version_info[:2] == (3, 11)  # the `_create_fn` below is 3.11's


class _State:
    def __init__(self) -> None:
        self.cached: dict[str, CodeType] = {}  # source text -> its code, from the file
        self.used: dict[str, CodeType] = {}  # what this process looked up or compiled
        self.compiled = 0  # texts not found in the cache
        self.original: Any = None  # dataclasses._create_fn before install()


_state = _State()


def _code(text: str) -> CodeType:
    code = _state.cached.get(text)
    if code is None:
        code = compile(text, "<string>", "exec")
        _state.compiled += 1
    _state.used[text] = code
    return code


def _create_fn(
    name: str,
    args: list[str],
    body: list[str],
    *,
    globals: dict[str, Any] | None = None,  # dataclasses' own parameter names
    locals: dict[str, Any] | None = None,
    return_type: Any = dataclasses.MISSING,
) -> Any:
    """dataclasses._create_fn of Python 3.11, with `exec` of the cached code for the text."""
    if locals is None:
        locals = {}
    return_annotation = ""
    if return_type is not dataclasses.MISSING:
        locals["_return_type"] = return_type
        return_annotation = "->_return_type"
    joined_args = ",".join(args)
    joined_body = "\n".join(f"  {b}" for b in body)
    text = f" def {name}({joined_args}){return_annotation}:\n{joined_body}"
    local_vars = ", ".join(locals.keys())
    text = f"def __create_fn__({local_vars}):\n{text}\n return {name}"
    ns: dict[str, Any] = {}
    exec(_code(text), globals, ns)
    return ns["__create_fn__"](**locals)


def _load(path: Path) -> dict[str, CodeType]:
    try:
        loaded = marshal.loads(path.read_bytes())
    except (OSError, EOFError, ValueError, TypeError):
        return {}
    if not isinstance(loaded, dict):
        return {}
    return {k: v for k, v in loaded.items() if isinstance(k, str) and isinstance(v, CodeType)}


def install(path: Path = CACHE_FILE) -> bool:
    """Use (and from now on fill) the cache; False, and nothing changed, if unsupported here."""
    if not SUPPORTED or _state.original is not None:
        return False
    _state.cached = _load(path)
    _state.original = dataclasses._create_fn  # type: ignore[attr-defined]
    dataclasses._create_fn = _create_fn  # type: ignore[attr-defined]
    return True


def uninstall() -> None:
    """Put dataclasses back as they were (tests)."""
    global _state
    if _state.original is not None:
        dataclasses._create_fn = _state.original  # type: ignore[attr-defined]
    _state = _State()


def compiled() -> int:
    """How many texts this process had to compile (not in the cache)."""
    return _state.compiled


def save(path: Path = CACHE_FILE) -> bool:
    """Write the code this process used, if some of it was not in the file; True if written.
    An unwritable place (a read-only image) is no error: the next start compiles again."""
    if not _state.compiled:
        return False
    temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary.write_bytes(marshal.dumps(_state.used))
        temporary.replace(path)  # atomic: a concurrent start reads the old file or the new one
    except OSError as exc:
        log.debug("dataclass code cache not written", extra={"path": str(path), "error": str(exc)})
        with contextlib.suppress(OSError):
            temporary.unlink()
        return False
    _state.cached, _state.compiled = dict(_state.used), 0
    return True


def build() -> None:
    """Fill the cache for `run` (the image build does this, where the package is writable)."""
    install()
    import policy_scheduler.service.operator  # noqa: F401

    save()
