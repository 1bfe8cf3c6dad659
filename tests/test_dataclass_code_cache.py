"""The dataclass method cache: classes come out the same, and a second start compiles nothing."""

from __future__ import annotations

import dataclasses
import marshal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from policy_scheduler import dataclass_code_cache as cache

pytestmark = pytest.mark.skipif(not cache.SUPPORTED, reason="the cache is for Python 3.11")


@pytest.fixture
def installed(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "cache.marshal"
    assert cache.install(path)
    try:
        yield path
    finally:
        cache.uninstall()


def _classes() -> tuple[type[Any], type[Any]]:
    @dataclasses.dataclass(frozen=True, slots=True)
    class Point:
        x: int
        y: int = 0
        tags: tuple[str, ...] = ()

    @dataclasses.dataclass(order=True)
    class Box:
        size: int
        items: list[str] = dataclasses.field(default_factory=list)
        label: str = dataclasses.field(default="", compare=False)

    return Point, Box


def _behaviour(point: type[Any], box: type[Any]) -> list[object]:
    p = point(1, tags=("a",))
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.x = 2
    b1, b2 = box(1, label="one"), box(2)
    b1.items.append("i")
    return [repr(p), p == point(1, 0, ("a",)), hash(p) == hash(point(1, 0, ("a",))), repr(b1), b1 < b2,
            box(1, ["i"]) == b1, box(2).items is not box(2).items]  # fmt: skip


def test_classes_made_with_the_cache_behave_as_without(installed: Path) -> None:
    with_cache = _behaviour(*_classes())
    cache.uninstall()
    assert with_cache == _behaviour(*_classes())


def test_a_second_start_compiles_nothing_and_a_changed_class_only_its_own_methods(installed: Path) -> None:
    _classes()
    first = cache.compiled()
    assert first > 0
    assert cache.save(installed)
    cache.uninstall()

    assert cache.install(installed)  # the next start
    point, box = _classes()
    assert cache.compiled() == 0
    assert not cache.save(installed)  # nothing new: the file is left alone
    assert _behaviour(point, box)[1] is True

    @dataclasses.dataclass
    class Renamed:  # fields no cached text has
        width: int

    assert 0 < cache.compiled() < first
    assert Renamed(3).width == 3


def test_a_corrupt_or_foreign_cache_file_means_compiling_as_before(installed: Path) -> None:
    for content in (b"not marshal at all", b"", marshal.dumps(["a", "list"])):
        cache.uninstall()
        installed.write_bytes(content)
        assert cache.install(installed)
        point, box = _classes()
        assert cache.compiled() > 0
        assert _behaviour(point, box)[1] is True


def test_an_unwritable_place_is_no_error(installed: Path, tmp_path: Path) -> None:
    _classes()
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    assert not cache.save(blocked / "cache.marshal")  # its directory is a file
    assert not list(tmp_path.glob("*.tmp"))


def test_run_path_saves_and_the_next_start_compiles_nothing(tmp_path: Path) -> None:
    """Two processes importing the operator as `run` does: the second compiles no method."""
    path = tmp_path / "cache.marshal"
    script = (
        "import sys; from pathlib import Path; from policy_scheduler import dataclass_code_cache as c;"
        f"c.install(Path({str(path)!r})); import policy_scheduler.service.operator;"
        f"print(c.compiled()); c.save(Path({str(path)!r}))"
    )
    counts = [
        int(subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True).stdout)
        for _ in range(2)
    ]
    assert counts[0] > 300
    assert counts[1] == 0
