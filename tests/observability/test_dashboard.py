"""The Grafana dashboard queries only metrics the operator exports, and loads as a ConfigMap."""

from __future__ import annotations

import json
import re

import yaml
from prometheus_client import CollectorRegistry

from policy_scheduler.observability import metrics
from policy_scheduler.observability.scheduler_metrics import register_engine
from policy_scheduler.scheduler.engine import Engine
from tests.paths import REPO

GRAFANA = REPO / "manifests" / "grafana"
DASHBOARD = GRAFANA / "policy-scheduler-dashboard.json"
PROMQL_WORDS = {
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "bool",
    "and",
    "or",
    "unless",
    "offset",
}
SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "gauge": ("",)}


def exported_series() -> set[str]:
    """Every series name /metrics can carry: our registry plus the engine collector's families."""
    engine_registry = CollectorRegistry()
    register_engine(Engine(), engine_registry)
    names: set[str] = set()
    for registry in (metrics.REGISTRY, engine_registry):
        for family in registry.collect():
            names.update(family.name + suffix for suffix in SUFFIXES[family.type])
    return names


def metric_names(expr: str) -> set[str]:
    """Identifiers that are series names: not functions, keywords, labels, or range/label parts."""
    expr = re.sub(r'"[^"]*"', "", expr)  # label values
    expr = re.sub(r"\{[^}]*\}", "", expr)  # label matchers
    expr = re.sub(r"\[[^\]]*\]", "", expr)  # ranges
    expr = re.sub(r"\b(by|without|on|ignoring)\s*\([^)]*\)", "", expr)  # grouping labels
    names = set()
    for match in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", expr):
        rest = expr[match.end() :].lstrip()
        if rest.startswith("(") or match.group() in PROMQL_WORDS:
            continue
        names.add(match.group())
    return names


def queries() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    return [t["expr"] for panel in dashboard["panels"] for t in panel.get("targets", [])]


def test_every_query_names_only_exported_metrics() -> None:
    exported = exported_series()
    used: set[str] = set()
    for expr in queries():
        names = metric_names(expr)
        assert names, f"no metric in {expr!r}"
        assert names <= exported, f"{expr!r} uses {sorted(names - exported)}, not exported"
        used |= names
    # The panels the dashboard promises: throughput, SLI latency, pending by plugin, evictions.
    for wanted in (
        "scheduler_schedule_attempts_total",
        "scheduler_pod_scheduling_sli_duration_seconds_bucket",
        "scheduler_unschedulable_pods",
        "scheduler_pending_pods",
        "policy_scheduler_evictions_total",
    ):
        assert wanted in used


def test_the_checker_catches_a_misspelled_metric() -> None:
    assert metric_names('sum by (le) (rate(schedulr_x_bucket{a="b"}[5m]))') == {"schedulr_x_bucket"}
    assert "schedulr_x_bucket" not in exported_series()


def test_kustomization_makes_a_labelled_configmap_of_the_dashboard() -> None:
    kustomization = yaml.safe_load((GRAFANA / "kustomization.yaml").read_text())
    assert kustomization["generatorOptions"]["labels"]["grafana_dashboard"] == "1"
    [generator] = kustomization["configMapGenerator"]
    assert generator["files"] == [DASHBOARD.name]
    dashboard = json.loads(DASHBOARD.read_text())
    assert dashboard["uid"]
    assert {p["id"] for p in dashboard["panels"]} == set(range(1, len(dashboard["panels"]) + 1))
