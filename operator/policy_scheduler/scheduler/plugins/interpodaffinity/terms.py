"""Processed pod (anti-)affinity terms: fwk.AffinityTerm / WeightedAffinityTerm / PodInfo terms.

`parse_pod_terms` mirrors framework.PodInfo.Update: the four term lists of a pod, each parsed
with fwk.GetAffinityTerms (a failing list is empty and reported). matchLabelKeys and
mismatchLabelKeys are merged into the label selector from the pod's own labels first, as the
API server does at pod creation (strategy.go applyMatchLabelKeysAndMismatchLabelKeys).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import cast

from policy_scheduler.scheduler.model import (
    Affinity,
    LabelSelector,
    Pod,
    PodAffinity,
    PodAffinityTerm,
    Requirement,
    WeightedPodAffinityTerm,
)
from policy_scheduler.scheduler.plugins.interpodaffinity.selectors import (
    NOTHING,
    Selector,
    SelectorError,
    aggregate,
    compile_selector,
)

EMPTY: Mapping[str, str] = {}
EMPTY_POD_AFFINITY = PodAffinity()


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    """fwk.AffinityTerm; hashable, so identical terms of many pods share one index group."""

    namespaces: frozenset[str]
    selector: Selector
    topology_key: str
    namespace_selector: Selector

    def matches(self, pod: Pod, ns_labels: Mapping[str, str] | None) -> bool:
        """AffinityTerm.Matches: namespace (by name or namespace labels), then the pod's labels."""
        if pod.namespace in self.namespaces or self.namespace_selector.matches(ns_labels or EMPTY):
            return self.selector.matches(pod.labels)
        return False


@dataclass(frozen=True, slots=True)
class WeightedTerm:
    term: AffinityTerm
    weight: int


@dataclass(frozen=True, slots=True)
class PodTerms:
    required_affinity: tuple[AffinityTerm, ...] = ()
    required_anti_affinity: tuple[AffinityTerm, ...] = ()
    preferred_affinity: tuple[WeightedTerm, ...] = ()
    preferred_anti_affinity: tuple[WeightedTerm, ...] = ()

    @property
    def empty(self) -> bool:
        return not (
            self.required_affinity
            or self.required_anti_affinity
            or self.preferred_affinity
            or self.preferred_anti_affinity
        )


NO_TERMS = PodTerms()


def merge_label_keys(term: PodAffinityTerm, labels: Mapping[str, str]) -> LabelSelector | None:
    """applyMatchLabelKeysAndMismatchLabelKeys; requirements already present are not repeated, so
    terms the API server has merged already stay as they are."""
    selector = term.label_selector
    if selector is None or not (term.match_label_keys or term.mismatch_label_keys):
        return selector
    extra = list(selector.match_expressions)
    for keys, operator in ((term.match_label_keys, "In"), (term.mismatch_label_keys, "NotIn")):
        for key in keys:
            value = labels.get(key)
            if value is None:
                continue
            req = Requirement(key, operator, (value,))
            if req not in extra:
                extra.append(req)
    return replace(selector, match_expressions=tuple(extra))


def new_term(pod: Pod, term: PodAffinityTerm) -> AffinityTerm:
    """newAffinityTerm; raises SelectorError for selectors apimachinery refuses."""
    selector = compile_selector(merge_label_keys(term, pod.labels))
    if not term.namespaces and term.namespace_selector is None:
        namespaces = frozenset((pod.namespace,))
    else:
        namespaces = frozenset(term.namespaces)
    ns_selector = compile_selector(term.namespace_selector)
    return AffinityTerm(namespaces, selector, term.topology_key, ns_selector)


def parse_pod_terms(pod: Pod) -> tuple[PodTerms, str | None]:
    """PodInfo.Update: the four lists and the aggregated parse error message (or None), parsed
    once per pod and kept on it."""
    affinity = pod.affinity
    if affinity is None or (affinity.pod_affinity is None and affinity.pod_anti_affinity is None):
        return NO_TERMS, None
    if pod.parsed_affinity_terms is None:
        pod.parsed_affinity_terms = _parse(pod, affinity)
    return cast("tuple[PodTerms, str | None]", pod.parsed_affinity_terms)


def _parse(pod: Pod, affinity: Affinity) -> tuple[PodTerms, str | None]:
    errors: list[str] = []

    def required(label: str, raw: tuple[PodAffinityTerm, ...]) -> tuple[AffinityTerm, ...]:
        try:
            return tuple(new_term(pod, t) for t in raw)
        except SelectorError as err:
            errors.append(f"{label}: {err}")
            return ()

    def preferred(label: str, raw: tuple[WeightedPodAffinityTerm, ...]) -> tuple[WeightedTerm, ...]:
        try:
            return tuple(WeightedTerm(new_term(pod, w.term), w.weight) for w in raw)
        except SelectorError as err:
            errors.append(f"{label}: {err}")
            return ()

    pa = affinity.pod_affinity or EMPTY_POD_AFFINITY
    paa = affinity.pod_anti_affinity or EMPTY_POD_AFFINITY
    terms = PodTerms(
        required("requiredAffinityTerms", pa.required),
        required("requiredAntiAffinityTerms", paa.required),
        preferred("preferredAffinityTerms", pa.preferred),
        preferred("preferredAntiAffinityTerms", paa.preferred),
    )
    return terms, (aggregate(errors) if errors else None)


def resolve_namespaces(term: AffinityTerm, namespace_labels: Mapping[str, Mapping[str, str]]) -> AffinityTerm:
    """mergeAffinityTermNamespacesIfNotEmpty: for the incoming pod's terms, a non-empty namespace
    selector is unrolled into namespace names (of known namespaces) and becomes Nothing."""
    if term.namespace_selector.everything:
        return term
    selector = term.namespace_selector
    names = {name for name, labels in namespace_labels.items() if selector.matches(labels)}
    return AffinityTerm(term.namespaces | names, term.selector, term.topology_key, NOTHING)


def resolve_pod_terms(terms: PodTerms, namespace_labels: Mapping[str, Mapping[str, str]]) -> PodTerms:
    return PodTerms(
        tuple(resolve_namespaces(t, namespace_labels) for t in terms.required_affinity),
        tuple(resolve_namespaces(t, namespace_labels) for t in terms.required_anti_affinity),
        tuple(
            WeightedTerm(resolve_namespaces(w.term, namespace_labels), w.weight)
            for w in terms.preferred_affinity
        ),
        tuple(
            WeightedTerm(resolve_namespaces(w.term, namespace_labels), w.weight)
            for w in terms.preferred_anti_affinity
        ),
    )


def matches_all(terms: tuple[AffinityTerm, ...], pod: Pod) -> bool:
    """podMatchesAllAffinityTerms (incoming terms have their namespace selector unrolled)."""
    if not terms:
        return False
    return all(t.matches(pod, None) for t in terms)


def has_required_anti_affinity(pod: Pod) -> bool:
    a = pod.affinity
    return a is not None and a.pod_anti_affinity is not None and bool(a.pod_anti_affinity.required)
