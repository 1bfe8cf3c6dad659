"""framework.NodeToStatus: the statuses of the nodes a cycle evaluated and rejected."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Mapping, MutableMapping

import numpy as np
import numpy.typing as npt

from policy_scheduler.scheduler.framework.status import Status

Names = npt.NDArray[np.object_]
Codes = npt.NDArray[np.intp]
_GONE = -1  # the code of a bulk entry that was overwritten or deleted since
_SCANS_BEFORE_INDEX = 8


class NodeToStatus(MutableMapping[str, Status]):
    """node name -> Status of each rejected node.

    The filter search hands its rejections over in bulk: the nodes' names and, per node, an
    index into a short list of distinct Status objects (thousands of nodes share a handful).
    They stay that way, so counting nodes per status and picking the nodes of a status are
    array work, and a by-name index is built only when one node is looked up. Statuses set one
    by one live in a dict; setting a bulk node's status moves it there.
    """

    __slots__ = ("_bulk_len", "_codes", "_explicit", "_lookups", "_names", "_position", "_statuses")

    def __init__(self, statuses: Mapping[str, Status] | None = None) -> None:
        self._names: Names = np.empty(0, dtype=np.object_)
        self._codes: Codes = np.empty(0, dtype=np.intp)
        self._statuses: list[Status] = []
        self._bulk_len = 0
        self._explicit: dict[str, Status] = dict(statuses) if statuses else {}
        self._position: dict[str, int] | None = None
        self._lookups = 0

    def extend_bulk(self, names: Names, codes: Codes, statuses: list[Status]) -> None:
        """Add nodes `names[i]` with status `statuses[codes[i]]`; the names must be distinct."""
        if self._bulk_len or (self._explicit and any(name in self._explicit for name in names.tolist())):
            for name, code in zip(names.tolist(), codes.tolist(), strict=True):
                self[name] = statuses[code]
            return
        self._names = names
        self._codes = codes.astype(np.intp, copy=True)  # ours: entries are marked _GONE in place
        self._statuses = statuses
        self._bulk_len = len(names)
        self._position = None
        self._lookups = 0

    def counts(self) -> list[tuple[Status, int]]:
        """Each distinct Status object with its number of nodes.

        Counting by object (an index, or the identity) spares hashing and comparing a dataclass
        per node; equal objects from different filter passes are listed apart, which sums to the
        same reason counts."""
        result: list[tuple[Status, int]] = []
        if self._bulk_len:
            live = self._codes[self._codes != _GONE]
            per_status = np.bincount(live, minlength=len(self._statuses)).tolist()
            result = [(self._statuses[i], n) for i, n in enumerate(per_status) if n]
        if self._explicit:
            values = self._explicit.values()
            by_id = dict(zip(map(id, values), values, strict=True))
            result.extend((by_id[key], n) for key, n in Counter(map(id, values)).items())
        return result

    def names_where(self, keep: Callable[[Status], bool]) -> list[str]:
        """The nodes whose status `keep` accepts, asked once per distinct Status object."""
        names: list[str] = []
        if self._bulk_len:
            wanted = [i for i, status in enumerate(self._statuses) if keep(status)]
            if wanted:
                names = self._names[np.isin(self._codes, wanted)].tolist()
        names.extend(name for name, status in self._explicit.items() if keep(status))
        return names

    def _bulk_position(self, name: str) -> int | None:
        if not self._bulk_len or not name:  # "": a pod's nominatedNodeName when it has none
            return None
        position: int | None
        if self._position is None and self._lookups < _SCANS_BEFORE_INDEX:
            # A cycle looks up one or two nodes (the nominated one): a scan is cheaper than an index.
            self._lookups += 1
            found = np.flatnonzero(self._names == name)
            position = int(found[0]) if len(found) else None
        else:
            if self._position is None:
                self._position = {n: i for i, n in enumerate(self._names.tolist())}
            position = self._position.get(name)
        if position is None or self._codes[position] == _GONE:
            return None
        return position

    def __getitem__(self, name: str) -> Status:
        status = self._explicit.get(name)
        if status is not None:
            return status
        position = self._bulk_position(name)
        if position is None:
            raise KeyError(name)
        return self._statuses[int(self._codes[position])]

    def __setitem__(self, name: str, status: Status) -> None:
        self._drop_bulk(name)
        self._explicit[name] = status

    def __delitem__(self, name: str) -> None:
        if not self._drop_bulk(name):
            del self._explicit[name]

    def _drop_bulk(self, name: str) -> bool:
        position = self._bulk_position(name)
        if position is None:
            return False
        self._codes[position] = _GONE
        self._bulk_len -= 1
        return True

    def __iter__(self) -> Iterator[str]:
        if self._bulk_len:
            yield from self._names[self._codes != _GONE].tolist()
        yield from self._explicit

    def __len__(self) -> int:
        return self._bulk_len + len(self._explicit)

    def __repr__(self) -> str:
        return f"NodeToStatus({dict(self.items())!r})"
