"""topologyToMatchedTermCount in code space: per topology key, a small int64 array indexed by
the NodeTable's label value code. Lookups for many rows are numpy indexing."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from policy_scheduler.scheduler.nodetable import ABSENT, IntArray, NodeTable, Rows

Codes = npt.NDArray[np.int32]


class TopologyCounts:
    """(topologyKey, value) → count, stored as key → counts[value code]."""

    __slots__ = ("by_key",)

    def __init__(self) -> None:
        self.by_key: dict[str, IntArray] = {}

    def clone(self) -> TopologyCounts:
        other = TopologyCounts()
        other.by_key = {k: v.copy() for k, v in self.by_key.items()}
        return other

    def _array(self, table: NodeTable, key: str, min_len: int) -> IntArray:
        arr = self.by_key.get(key)
        if arr is None or len(arr) < min_len:
            size = max(min_len, len(table.label_values(key)))
            bigger = np.zeros(size, dtype=np.int64)
            if arr is not None:
                bigger[: len(arr)] = arr
            arr = bigger
            self.by_key[key] = arr
        return arr

    def add_rows(self, table: NodeTable, key: str, rows: Rows, amounts: IntArray) -> bool:
        """Add `amounts` at the topology value of each row (rows lacking the key are skipped).
        Returns whether any row had the key (upstream creates a map entry then)."""
        codes = table.label_codes(key)[rows]
        has = codes != ABSENT
        if not has.any():
            return False
        codes = codes[has]
        arr = self._array(table, key, int(codes.max()) + 1)
        np.add.at(arr, codes, amounts[has])
        return True

    def add_row(self, table: NodeTable, key: str, row: int, amount: int) -> None:
        """topologyToMatchedTermCount.update for one node."""
        code = int(table.label_codes(key)[row])
        if code == ABSENT:
            return
        self._array(table, key, code + 1)[code] += amount

    def lookup(self, key: str, codes: Codes) -> IntArray:
        """Count at each label value code (`table.label_codes(key)[rows]`); 0 where ABSENT."""
        out = np.zeros(len(codes), dtype=np.int64)
        arr = self.by_key.get(key)
        if arr is None:
            return out
        ok = (codes != ABSENT) & (codes < len(arr))
        out[ok] = arr[codes[ok]]
        return out

    def empty(self) -> bool:
        """len(map) == 0: upstream deletes entries that drop to zero."""
        return not any(arr.any() for arr in self.by_key.values())

    def keys_with_positive(self) -> list[str]:
        return [k for k, arr in self.by_key.items() if (arr > 0).any()]

    def pairs(self, table: NodeTable) -> dict[tuple[str, str], int]:
        """The upstream map form, for tests and explanations."""
        out: dict[tuple[str, str], int] = {}
        for key, arr in self.by_key.items():
            values = table.label_values(key)
            for code in np.flatnonzero(arr):
                out[(key, values[int(code)])] = int(arr[code])
        return out
