"""RequireNodeLabel: an example out-of-tree policy-scheduler plugin (a Filter with typed args).

A profile enables it like any plugin and configures it in pluginConfig:

    pluginConfig:
    - name: RequireNodeLabel
      args: {labelKey: example.com/pool}
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from policy_scheduler.scheduler.field_errors import Problem
from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.interfaces import FilterPlugin, FilterResult, Handle
from policy_scheduler.scheduler.framework.status import Code, Status
from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.nodetable import ABSENT, Rows

DEFAULT_LABEL_KEY = "example.com/pool"


@dataclass(frozen=True, slots=True)
class RequireNodeLabelArgs:
    label_key: str = DEFAULT_LABEL_KEY

    @classmethod
    def defaulted(cls, raw: Mapping[str, Any]) -> RequireNodeLabelArgs:
        key = raw.get("labelKey", DEFAULT_LABEL_KEY)
        if not isinstance(key, str):
            raise ValueError(f"labelKey: expected a string, got {key!r}")
        return cls(key)

    def problems(self) -> list[Problem]:
        return [Problem("labelKey", self.label_key, "must not be empty")] if not self.label_key else []

    def to_json(self) -> dict[str, Any]:
        return {"labelKey": self.label_key}


class RequireNodeLabel(FilterPlugin):
    name = "RequireNodeLabel"
    # policy-scheduler defaults and checks pluginConfig with it, and hands the result to __init__.
    args_type = RequireNodeLabelArgs

    def __init__(self, handle: Handle, args: RequireNodeLabelArgs) -> None:
        super().__init__(handle, args)
        self.typed = args

    def filter(self, state: CycleState, pod: Pod, rows: Rows) -> FilterResult:
        # Vectorized over the candidate rows: the label column holds ABSENT where a node lacks it.
        missing = self.table.label_codes(self.typed.label_key)[rows] == ABSENT
        reason = f"node(s) didn't have label {self.typed.label_key}"
        return FilterResult.reject_where(missing, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (reason,)))
