"""Read `simulate` input: YAML files of Kubernetes objects and our policy CRs, into a Scenario.

Everything is validated before anything is scheduled: a bad quantity or a duplicate name is a
ScenarioError naming the file, the object and the field. What `kubectl get -o yaml` prints is
read as is: kinds simulate does not use are counted and skipped, terminal pods (Succeeded,
Failed) are left out as the operator's pod informer leaves them out, and server-populated
fields (managedFields, status conditions...) are ignored by the decoders.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from policy_scheduler.apiobjects.cluster_objects import NamespaceInfo, PDBInfo, PriorityClassInfo
from policy_scheduler.apiobjects.convert import pod_from_dict
from policy_scheduler.apiobjects.convert_cluster import (
    namespace_from_dict,
    node_from_dict,
    pdb_from_dict,
    priority_class_from_dict,
)
from policy_scheduler.apiobjects.errors import ConversionError
from policy_scheduler.apiobjects.owners import KINDS as OWNER_KINDS
from policy_scheduler.apiobjects.owners import OwnerInfo, owner_from_dict
from policy_scheduler.apiobjects.podgroup_api import GROUP as PODGROUP_GROUP
from policy_scheduler.apiobjects.podgroups import pod_group_from_dict
from policy_scheduler.apiobjects.storage_convert import STORAGE_KINDS, storage_object_from_dict
from policy_scheduler.scheduler.gang import PodGroup
from policy_scheduler.scheduler.model import Node, Pod
from policy_scheduler.scheduler.storage.lister import StorageObject
from policy_scheduler.simulate import dra

# Classes the API server always has (scheduling.k8s.io system classes).
SYSTEM_PRIORITY_CLASSES = (
    PriorityClassInfo("system-node-critical", 2000001000),
    PriorityClassInfo("system-cluster-critical", 2000000000),
)
POLICY_GROUP = "scheduling.policy-scheduler.io"
# The operator watches pods with status.phase!=Succeeded,status.phase!=Failed: these hold nothing.
TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})


class ScenarioError(ValueError):
    """Bad input; the message names the file, the object and the field."""


@dataclass(slots=True)
class Scenario:
    nodes: list[Node] = field(default_factory=list)
    pods: list[Pod] = field(default_factory=list)  # input order; bound ones have node_name
    priority_classes: dict[str, PriorityClassInfo] = field(default_factory=dict)
    pdbs: list[PDBInfo] = field(default_factory=list)
    # Services, ReplicationControllers, ReplicaSets, StatefulSets: PodTopologySpread's default selector.
    owners: list[OwnerInfo] = field(default_factory=list)
    namespaces: dict[str, NamespaceInfo] = field(default_factory=dict)
    # PVs, PVCs, StorageClasses, CSINodes, CSIDrivers, CSIStorageCapacities.
    storage: list[StorageObject] = field(default_factory=list)
    # Our CRs as plain dicts (validated by the policy layer when the engine is built).
    profiles: list[dict[str, Any]] = field(default_factory=list)
    eviction_policies: list[dict[str, Any]] = field(default_factory=list)
    priority_class_mirrors: list[dict[str, Any]] = field(default_factory=list)
    # DeviceClasses, ResourceSlices, ResourceClaims, ResourceClaimTemplates (simulate/dra.py)
    dra: list[dict[str, Any]] = field(default_factory=list)
    # scheduler-plugins PodGroups (gang scheduling).
    pod_groups: list[PodGroup] = field(default_factory=list)
    # The API server's gitVersion (e.g. v1.37.2) when read from a cluster; None from files.
    server_version: str | None = None
    # Node-pressure inputs (issue 35): NodeMetrics and PodMetrics (metrics.k8s.io), and
    # KubeletConfiguration documents, kept as read; apiobjects/usage.py converts them.
    usage_documents: list[Document] = field(default_factory=list)
    kubelet_configs: list[Document] = field(default_factory=list)
    # Read but not used: kind -> count of objects of kinds simulate ignores; terminal pods.
    skipped_kinds: dict[str, int] = field(default_factory=dict)
    terminal_pods: int = 0


@dataclass(slots=True)
class Document:
    """One object of an input file; items of a List count as documents of their own."""

    file: str
    index: int
    body: Mapping[str, Any]

    def where(self) -> str:
        kind = self.body.get("kind", "?")
        meta = self.body.get("metadata") if isinstance(self.body.get("metadata"), Mapping) else {}
        name = (meta or {}).get("name", "?")
        ns = (meta or {}).get("namespace")
        ident = f"{ns}/{name}" if ns else str(name)
        return f"{self.file}: document {self.index + 1}: {kind} {ident}"


def read_documents(path: Path, *, lenient: bool = False, strict: bool = False) -> Iterator[Document]:
    """The objects of a multi-document YAML file, `kind: List` (or `*List`) items expanded.
    `lenient`: documents that are not objects (a YAML list, a scalar) are passed over.
    `strict`: a key given twice in one mapping is an error (as kubectl's decoder has it)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScenarioError(f"{path}: {exc.strerror or exc}") from None
    yield from parse_documents(text, str(path), lenient=lenient, strict=strict)


# libyaml's safe loader when PyYAML was built with it: many times faster than the pure-Python one
# on large dumps, and it accepts the same documents.
SafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class StrictLoader(SafeLoader):  # type: ignore[misc,valid-type]
    """The safe loader (libyaml's when built) refusing a mapping key given twice: with
    `evictionHard: {memory.available: 1Gi, memory.available: 10%}` the second would silently win."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        # Compared as written (tag and text), before merge keys (`<<`) are expanded: a key may
        # override a merged one, never repeat one of its own mapping.
        keys = [
            (k.tag, k.value) for k, _ in node.value if isinstance(k, yaml.ScalarNode) and k.tag != _MERGE_TAG
        ]
        if len(set(keys)) != len(keys):
            seen: set[tuple[str, str]] = set()
            for key_node, _ in node.value:
                key = (key_node.tag, key_node.value)
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping",
                        node.start_mark,
                        f"found duplicate key {key_node.value!r}",
                        key_node.start_mark,
                    )
                seen.add(key)
        result: dict[Any, Any] = super().construct_mapping(node, deep)
        return result


_MERGE_TAG = "tag:yaml.org,2002:merge"


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) == len(pairs):
        return result
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            raise ValueError(f"found duplicate key {key!r}")
        seen.add(key)
    return result  # pragma: no cover - a shorter dict means a key was repeated


def _json(text: str, path: str, *, strict: bool) -> list[Any] | None:
    """A JSON file (`kubectl get -o json`) read with the json module, which is many times faster
    than a YAML loader on large dumps; None when the text is not one JSON value. `strict`: a key
    given twice is an error (else the last wins, as with the YAML loader)."""
    if not text.lstrip().startswith(("{", "[")):
        return None
    try:
        return [json.loads(text, object_pairs_hook=_unique_keys if strict else None)]
    except json.JSONDecodeError:
        return None  # YAML flow style, or several documents: the YAML loader reads (or rejects) it
    except ValueError as exc:
        raise ScenarioError(f"{path}: invalid JSON: {exc}") from None


def parse_documents(
    text: str, path: str, *, lenient: bool = False, strict: bool = False
) -> Iterator[Document]:
    """read_documents for text already read (stdin); `path` names it in messages."""
    docs = _json(text, path, strict=strict)
    if docs is None:
        try:
            docs = list(yaml.load_all(text, Loader=StrictLoader if strict else SafeLoader))
        except yaml.YAMLError as exc:
            raise ScenarioError(f"{path}: invalid YAML: {exc}") from None
    index = 0
    for doc in docs:
        if doc is None:
            continue
        if not isinstance(doc, Mapping) and lenient:
            continue
        if not isinstance(doc, Mapping):
            raise ScenarioError(
                f"{path}: document {index + 1}: expected a Kubernetes object, got {type(doc).__name__}"
            )
        if doc.get("kind") == "List" or (str(doc.get("kind", "")).endswith("List") and "items" in doc):
            for item in doc.get("items") or []:
                if not isinstance(item, Mapping):
                    raise ScenarioError(f"{path}: document {index + 1}: list item is not an object")
                yield Document(str(path), index, item)
                index += 1
            continue
        yield Document(str(path), index, doc)
        index += 1


def load_scenario(paths: Iterable[str | Path], *, strict: bool = False, admitted: bool = False) -> Scenario:
    """`strict`: see read_documents. `admitted`: the pods were admitted by an API server (a
    `kubectl get` dump), so a priorityClassName not in the input is no error: spec.priority
    already holds its value."""
    scenario = Scenario()
    seen: dict[tuple[str, str], str] = {}  # (kind, name) -> where it was read, for messages
    for path in paths:
        for doc in read_documents(Path(path), strict=strict):
            _add(scenario, doc, seen)
    _apply_priority_admission(scenario, seen, admitted)
    return scenario


def _identity(doc: Document) -> tuple[str, str]:
    kind = str(doc.body.get("kind", ""))
    meta = doc.body.get("metadata")
    if not isinstance(meta, Mapping) or not meta.get("name"):
        raise ScenarioError(f"{doc.where()}: metadata.name: required")
    name = str(meta["name"])
    if kind in (
        "Pod",
        "PodDisruptionBudget",
        "PodGroup",
        "PersistentVolumeClaim",
        "CSIStorageCapacity",
        "PodMetrics",
        *OWNER_KINDS,
        *dra.CLAIM_KINDS,
    ):
        name = f"{meta.get('namespace') or 'default'}/{name}"
    return kind, name


def _add(scenario: Scenario, doc: Document, seen: dict[tuple[str, str], str]) -> None:
    kind = doc.body.get("kind")
    if not isinstance(kind, str) or not kind:
        raise ScenarioError(f"{doc.where()}: kind: required")
    if kind not in USED_KINDS:
        scenario.skipped_kinds[kind] = scenario.skipped_kinds.get(kind, 0) + 1
        return
    if kind == KUBELET_CONFIGURATION:  # a config file: no metadata
        scenario.kubelet_configs.append(doc)
        return
    ident = _identity(doc)
    if ident in seen:
        raise ScenarioError(f"{doc.where()}: metadata.name: duplicate {ident[0]} {ident[1]!r}")
    seen[ident] = doc.where()
    try:
        if kind == "Node":
            scenario.nodes.append(node_from_dict(doc.body))
        elif kind == "Pod":
            pod = pod_from_dict(doc.body)
            if pod.phase in TERMINAL_PHASES:
                scenario.terminal_pods += 1
            else:
                scenario.pods.append(pod)
        elif kind == "PriorityClass":
            pc = priority_class_from_dict(doc.body)
            scenario.priority_classes[pc.name] = pc
        elif kind == "PodDisruptionBudget":
            scenario.pdbs.append(pdb_from_dict(doc.body))
        elif kind == "Namespace":
            ns = namespace_from_dict(doc.body)
            scenario.namespaces[ns.name] = ns
        elif kind in OWNER_KINDS:
            scenario.owners.append(owner_from_dict(doc.body))
        elif kind in STORAGE_KINDS:
            scenario.storage.append(storage_object_from_dict(kind, doc.body))
        elif kind in dra.KINDS:
            scenario.dra.append(_dra_object(doc))
        elif kind == "SchedulingProfile" and _is_ours(doc):
            scenario.profiles.append(dict(doc.body))
        elif kind == "EvictionPolicy" and _is_ours(doc):
            scenario.eviction_policies.append(dict(doc.body))
        elif kind == "PriorityClassMirror" and _is_ours(doc):
            scenario.priority_class_mirrors.append(dict(doc.body))
        elif kind in USAGE_KINDS:
            scenario.usage_documents.append(doc)
        elif kind == "PodGroup" and str(doc.body.get("apiVersion", "")).startswith(PODGROUP_GROUP + "/"):
            scenario.pod_groups.append(pod_group_from_dict(dict(doc.body)))
    except ConversionError as exc:
        field_path = f"{exc.path}: " if exc.path else ""
        raise ScenarioError(f"{doc.where()}: {field_path}{exc.message}") from None


def _dra_object(doc: Document) -> dict[str, Any]:
    obj = dict(doc.body)
    if obj["kind"] in dra.CLAIM_KINDS:
        obj["metadata"] = {"namespace": "default", **obj["metadata"]}
    try:
        dra.check(obj)
    except dra.DraInputError as exc:
        raise ScenarioError(f"{doc.where()}: {exc}") from None
    return obj


POLICY_KINDS = ("SchedulingProfile", "EvictionPolicy", "PriorityClassMirror")
USAGE_KINDS = ("NodeMetrics", "PodMetrics")
KUBELET_CONFIGURATION = "KubeletConfiguration"
USED_KINDS = frozenset(
    (
        *USAGE_KINDS,
        KUBELET_CONFIGURATION,
        "Node",
        "Pod",
        "PriorityClass",
        "PodDisruptionBudget",
        "Namespace",
        "PodGroup",
        *OWNER_KINDS,
        *STORAGE_KINDS,
        *POLICY_KINDS,
        *dra.KINDS,
    )
)


def skipped_note(scenario: Scenario) -> str | None:
    """One line for stderr: what was read but not simulated."""
    parts = [f"{kind} ({n})" for kind, n in sorted(scenario.skipped_kinds.items())]
    notes = []
    if parts:
        notes.append("skipped kinds simulate does not use: " + ", ".join(parts))
    if scenario.terminal_pods:
        notes.append(f"skipped {scenario.terminal_pods} terminal pod(s) (Succeeded/Failed)")
    return "note: " + "; ".join(notes) if notes else None


def _is_ours(doc: Document) -> bool:
    api_version = str(doc.body.get("apiVersion", ""))
    if not api_version.startswith(POLICY_GROUP + "/"):
        raise ScenarioError(
            f"{doc.where()}: apiVersion: expected {POLICY_GROUP}/v1alpha1, got {api_version!r}"
        )
    return True


def _class_of_mirror(mirror: Mapping[str, Any]) -> PriorityClassInfo:
    name = str((mirror.get("metadata") or {}).get("name", ""))
    spec = mirror.get("spec") or {}
    value = spec.get("value")
    if not isinstance(value, int) or isinstance(value, bool):
        raise ScenarioError(f"PriorityClassMirror {name}: spec.value: expected an integer, got {value!r}")
    return PriorityClassInfo(
        name,
        value,
        global_default=bool(spec.get("globalDefault", False)),
        preemption_policy=str(spec.get("preemptionPolicy") or "PreemptLowerPriority"),
    )


def _apply_priority_admission(
    scenario: Scenario, where: Mapping[tuple[str, str], str], admitted: bool = False
) -> None:
    """What the Priority admission plugin does: resolve priorityClassName, else the global default."""
    classes = {pc.name: pc for pc in SYSTEM_PRIORITY_CLASSES}
    # A PriorityClassMirror stands for the native class the operator keeps in sync.
    for mirror in scenario.priority_class_mirrors:
        mirrored = _class_of_mirror(mirror)
        scenario.priority_classes.setdefault(mirrored.name, mirrored)
    classes.update(scenario.priority_classes)
    defaults = [pc for pc in scenario.priority_classes.values() if pc.global_default]
    if len(defaults) > 1:
        names = ", ".join(sorted(pc.name for pc in defaults))
        second = where.get(("PriorityClass", defaults[1].name), "PriorityClass")
        raise ScenarioError(f"{second}: globalDefault: more than one global default class ({names})")
    default = defaults[0] if defaults else None
    for i, pod in enumerate(scenario.pods):
        if pod.priority_class_name:
            pc = classes.get(pod.priority_class_name)
            if pc is None and admitted:
                continue
            if pc is None:
                origin = where.get(("Pod", pod.key), f"Pod {pod.key}")
                raise ScenarioError(
                    f"{origin}: spec.priorityClassName: no PriorityClass named {pod.priority_class_name!r}"
                )
        elif default is not None:
            pc = default
        else:
            continue
        if pod.priority == 0:  # an explicit spec.priority came from the API server already
            scenario.pods[i] = dataclasses.replace(
                pod, priority=pc.value, priority_class_name=pc.name, preemption_policy=pc.preemption_policy
            )
