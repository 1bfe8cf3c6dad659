"""What `policy-scheduler validate` found, as `file:Kind/name:field: message` lines or JSON."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

# Where a problem was found, in the order the API server and then the operator look.
INPUT, SCHEMA, CEL, OPERATOR, REFERENCE = "input", "schema", "cel", "operator", "reference"
# Stages whose problems make the API server refuse the object (the rest the operator rejects).
SERVER_STAGES = frozenset({SCHEMA, CEL})
# Only errors fail validation; a warning is what the API server would tell and accept.
ERROR, WARNING = "error", "warning"


@dataclass(frozen=True, slots=True)
class Problem:
    file: str
    object: str  # Kind/name; empty for a problem with the file itself
    field: str  # JSON path below the object; empty when the object as a whole is at fault
    message: str
    stage: str
    severity: str = ERROR

    def line(self) -> str:
        message = self.message if self.severity == ERROR else f"{self.severity}: {self.message}"
        if not self.object:
            return f"{self.file}: {message}"
        return f"{self.file}:{self.object}:{self.field or '<root>'}: {message}"


@dataclass(slots=True)
class Report:
    problems: list[Problem] = field(default_factory=list)
    objects: list[tuple[str, str]] = field(default_factory=list)  # (file, Kind/name) checked
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (file, Kind/name) not ours
    notes: list[str] = field(default_factory=list)

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == ERROR]

    def to_json(self) -> dict[str, Any]:
        """The public JSON contract (`-o json`): keep it stable."""
        invalid = {(p.file, p.object) for p in self.errors}
        return {
            "valid": not self.errors,
            "problems": [asdict(p) for p in self.problems],
            "objects": [{"file": f, "object": o, "valid": (f, o) not in invalid} for f, o in self.objects],
            "skipped": [{"file": f, "object": o} for f, o in self.skipped],
        }

    def summary(self) -> str:
        files = len({f for f, _ in self.objects} | {f for f, _ in self.skipped})
        bad = len({(p.file, p.object) for p in self.errors if p.object})
        warnings = len(self.problems) - len(self.errors)
        return (
            f"validated {len(self.objects)} policy object(s) in {files} file(s): "
            f"{len(self.errors)} problem(s) in {bad} object(s), "
            + (f"{warnings} warning(s), " if warnings else "")
            + f"{len(self.skipped)} other object(s) skipped"
        )
