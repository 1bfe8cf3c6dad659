"""`policy-scheduler validate FILE|DIR|- ...`: check policy manifests offline, exactly as the API
server (CRD schema and CEL rules) and then the operator (spec semantics, references) would.

Exit 0: every policy object is valid; 1: an object has problems; 2: a file could not be read or
parsed (its objects are unknown).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from policy_scheduler.policy import constants as c
from policy_scheduler.scheduler.versioning.features import Features
from policy_scheduler.scheduler.versioning.semantics import command_semantics
from policy_scheduler.simulate.scenario import Document, ScenarioError, parse_documents, read_documents
from policy_scheduler.validate.crossref import cross_checks
from policy_scheduler.validate.objects import POLICY_KINDS, STRICT, Checked, check_object
from policy_scheduler.validate.report import INPUT, WARNING, Problem, Report

EXIT_PROBLEMS = 1
EXIT_BAD_INPUT = 2
SUFFIXES = (".yaml", ".yml", ".json")
STDIN = "-"


def expand(paths: Iterable[str]) -> Iterator[str]:
    """Files as given; directories walked for *.yaml, *.yml and *.json (hidden ones skipped)."""
    for raw in paths:
        path = Path(raw)
        if raw != STDIN and path.is_dir():
            for found in sorted(path.rglob("*")):
                hidden = any(part.startswith(".") for part in found.relative_to(path).parts)
                if found.is_file() and found.suffix in SUFFIXES and not hidden:
                    yield str(found)
        else:
            yield raw


def _documents(name: str) -> list[Document]:
    if name == STDIN:
        return list(parse_documents(sys.stdin.read(), "<stdin>", lenient=True))
    # A repository holds other YAML too (CI workflows, values files): only objects matter.
    return list(read_documents(Path(name), lenient=True))


def _ident(doc: Document) -> str:
    meta = doc.body.get("metadata")
    name = meta.get("name") if isinstance(meta, Mapping) else None
    return f"{doc.body.get('kind', '?')}/{name or '?'}"


def validate_paths(
    paths: Iterable[str], field_validation: str = STRICT, features: Features | None = None
) -> Report:
    """`features`: the release (and gates) the operator's checks follow (None: the newest)."""
    report = Report()
    checked: list[tuple[str, Checked]] = []
    for name in expand(paths):
        try:
            docs = _documents(name)
        except ScenarioError as exc:
            message = str(exc).removeprefix(f"{name}: ")
            report.problems.append(Problem(name, "", "", message, INPUT))
            continue
        for doc in docs:
            kind = str(doc.body.get("kind", ""))
            api_version = str(doc.body.get("apiVersion", ""))
            if not kind:
                continue  # not a Kubernetes object
            if kind not in POLICY_KINDS or not api_version.startswith(c.GROUP + "/"):
                report.skipped.append((doc.file, _ident(doc)))
                continue
            report.objects.append((doc.file, _ident(doc)))
            if api_version != c.API_VERSION:
                message = f"version {api_version!r} is not served: use {c.API_VERSION}"
                report.problems.append(Problem(doc.file, _ident(doc), "apiVersion", message, INPUT))
                continue
            obj = check_object(kind, doc.body, field_validation, features)
            checked.append((doc.file, obj))
            ident = _ident(doc)
            report.problems += [Problem(doc.file, ident, f, m, s, WARNING) for f, m, s in obj.warnings]
            report.problems += [Problem(doc.file, ident, f, m, s) for f, m, s in obj.errors]
    report.problems += cross_checks(checked)
    # Grouped by object, in input order: cross-object problems join their object's others.
    order = {key: i for i, key in reversed(list(enumerate(report.objects)))}
    report.problems.sort(key=lambda p: order.get((p.file, p.object), -1))
    _note_skipped(report)
    return report


def _note_skipped(report: Report) -> None:
    by_file: dict[str, list[str]] = {}
    for file, ident in report.skipped:
        by_file.setdefault(file, []).append(ident)
    for file, idents in by_file.items():
        shown = ", ".join(idents[:5]) + (f" and {len(idents) - 5} more" if len(idents) > 5 else "")
        count = len(idents)
        report.notes.append(f"note: {file}: skipped {count} object(s) that are not policy kinds: {shown}")


def _features(args: argparse.Namespace) -> Features:
    return command_semantics(getattr(args, "kubernetes_version", None)).features


def validate_command(args: argparse.Namespace) -> int:
    report = validate_paths(args.paths, args.validate, _features(args))
    if args.output == "json":
        sys.stdout.write(json.dumps(report.to_json(), indent=2) + "\n")
    else:
        for problem in report.problems:
            print(problem.line())
        for note in report.notes:
            print(note, file=sys.stderr)
        print(report.summary(), file=sys.stderr)
    if not report.objects:
        print("note: no policy objects found", file=sys.stderr)
    if any(p.stage == INPUT and not p.object for p in report.problems):
        return EXIT_BAD_INPUT
    return EXIT_PROBLEMS if report.errors else 0
