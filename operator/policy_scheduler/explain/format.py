"""Explanations as a readable table."""

from __future__ import annotations

import time

from policy_scheduler.kube.pressure.standing import placement_lines, standing_lines
from policy_scheduler.scheduler.diagnosis_recorder import PENDING, RUNNING, Explanation

SOURCES = {
    "operator": "the operator's last scheduling attempt",
    "recomputed": "recomputed now from a live snapshot (the operator was not asked or had no record)",
}


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows
    ]


def _when(at: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at)) if at else "-"


def format_explanation(explanation: Explanation, note: str = "") -> str:
    e = explanation
    lines = [f"Pod:      {e.key}", f"Profile:  {e.profile or '-'}"]
    if e.state == PENDING:
        lines.append(f"State:    pending ({e.reason or 'Unschedulable'})")
    elif e.state == RUNNING:
        lines.append(f"State:    running on {e.node}")
    else:
        lines.append(f"State:    scheduled to {e.node}")
    if e.state != RUNNING:
        lines.append(f"Source:   {SOURCES.get(e.source, e.source)}, at {_when(e.at)}")
    if note:
        lines.append(f"Note:     {note}")
    if e.pressure is not None:
        lines += standing_lines(dict(e.pressure))
    if e.placement is not None:
        lines += placement_lines(dict(e.placement))
    if e.state == RUNNING:
        if e.message:
            lines.append(f"Message:  {e.message}")
        return "\n".join(lines) + "\n"
    if e.state == PENDING:
        if e.message:
            lines.append(f"Message:  {e.message}")
        if e.rejections:
            lines.append("")
            rows = [["NODES", "PLUGIN", "REASON"]]
            rows += [[f"{r.nodes}/{e.num_nodes}", r.plugin or "-", r.reason] for r in e.rejections]
            lines += _table(rows)
        if e.node:  # Reserve, Permit or binding turned the chosen node down
            lines.append("")
            lines.append(f"The scheduler chose {e.node}, then that node was turned down (see Message).")
        return "\n".join(lines) + "\n"
    lines.append(
        f"Nodes:    {e.feasible_nodes} feasible of {e.evaluated_nodes} evaluated "
        f"({e.num_nodes} in the cluster)"
    )
    scored = [s for s in e.scores if s.by_plugin]
    if not scored:
        lines.append("Scores:   none (the only feasible node, or no Score plugins)")
        return "\n".join(lines) + "\n"
    lines.append("")
    header = ["PLUGIN"] + [s.node + (" (chosen)" if i == 0 else "") for i, s in enumerate(scored)]
    plugins = sorted({name for s in scored for name in s.by_plugin})
    rows = [header]
    rows += [[name] + [str(s.by_plugin.get(name, "-")) for s in scored] for name in plugins]
    rows.append(["TOTAL"] + [str(s.total) for s in scored])
    lines += _table(rows)
    if len(scored) > 1:
        margin = scored[0].total - scored[1].total
        lines.append("")
        lines.append(
            f"{scored[0].node} won by {margin} over {scored[1].node}"
            if margin > 0
            else f"{scored[0].node} tied with {scored[1].node}; kube-scheduler breaks ties at random"
        )
    return "\n".join(lines) + "\n"
