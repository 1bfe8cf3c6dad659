"""Invariants of the deployment files (manifests/, Dockerfile, e2e/kind/) and of examples/.

No cluster: e2e/test_rbac.py proves on a real API server that the ClusterRole is enough.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import re
import tomllib
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from policy_scheduler.app.cli import build_parser
from policy_scheduler.explain.client import PORT_NAME
from policy_scheduler.kube.serving.authorization import PathPatterns
from policy_scheduler.policy.compile import compile_profile_objects, parse_profile_spec
from policy_scheduler.policy.errors import parse_model
from policy_scheduler.policy.eviction import EvictionPolicySpec
from policy_scheduler.policy.priorityclass import PriorityClassMirrorSpec, name_problem
from policy_scheduler.scheduler.versioning.features import Features
from policy_scheduler.scheduler.versioning.version import SUPPORTED_VERSIONS, KubernetesVersion
from tests.paths import REPO

ROOT = REPO
MANIFESTS = ROOT / "manifests"
EXAMPLES = ROOT / "examples"
NAMESPACE = "policy-scheduler"
SERVICE_ACCOUNT = "policy-scheduler"
GROUP = "scheduling.policy-scheduler.io"

# (apiGroup, resource) -> verbs the operator may be granted. Anything else is a review matter.
ALLOWED: dict[tuple[str, str], set[str]] = {
    ("", "pods"): {"get", "list", "watch", "delete"},
    ("", "pods/binding"): {"create"},
    ("", "pods/status"): {"patch"},
    ("", "pods/eviction"): {"create"},
    ("", "nodes"): {"get", "list", "watch"},
    ("", "namespaces"): {"get", "list", "watch"},
    ("policy", "poddisruptionbudgets"): {"get", "list", "watch"},
    ("resource.k8s.io", "resourceslices"): {"get", "list", "watch"},
    ("resource.k8s.io", "deviceclasses"): {"get", "list", "watch"},
    ("resource.k8s.io", "devicetaintrules"): {"get", "list", "watch"},
    # Claims for extended resources backed by DRA are created (and deleted when unused).
    ("resource.k8s.io", "resourceclaims"): {"get", "list", "watch", "update", "create", "delete"},
    ("resource.k8s.io", "resourceclaims/status"): {"update", "patch"},
    # DRAResourceClaimGranularStatusAuthorization (v1.36+): allocation and reservedFor writes.
    ("resource.k8s.io", "resourceclaims/binding"): {"update", "patch"},
    ("", "services"): {"get", "list", "watch"},
    ("", "replicationcontrollers"): {"get", "list", "watch"},
    ("apps", "replicasets"): {"get", "list", "watch"},
    ("apps", "statefulsets"): {"get", "list", "watch"},
    ("scheduling.k8s.io", "priorityclasses"): {"get", "list", "watch", "create", "patch", "delete"},
    ("events.k8s.io", "events"): {"create", "patch"},
    ("apiextensions.k8s.io", "customresourcedefinitions"): {"get", "list", "watch"},
    ("", "persistentvolumes"): {"get", "list", "watch", "patch"},
    ("", "persistentvolumeclaims"): {"get", "list", "watch", "patch"},
    **{
        ("storage.k8s.io", r): {"get", "list", "watch"}
        for r in (
            "storageclasses",
            "csinodes",
            "csidrivers",
            "csistoragecapacities",
            "volumeattachments",
        )
    },
    # Gang scheduling: PodGroups read, their status reported.
    ("scheduling.x-k8s.io", "podgroups"): {"get", "list", "watch"},
    ("scheduling.x-k8s.io", "podgroups/status"): {"patch"},
    # The Workload API's gangs (scheduling.k8s.io): read, their scheduling condition written.
    ("scheduling.k8s.io", "podgroups"): {"get", "list", "watch"},
    ("scheduling.k8s.io", "podgroups/status"): {"patch"},
    ("scheduling.k8s.io", "workloads"): {"get", "list", "watch"},
    # Node pressure: usage from metrics-server, read only.
    ("metrics.k8s.io", "nodes"): {"get", "list"},
    ("metrics.k8s.io", "pods"): {"get", "list"},
    **{
        (GROUP, plural): {"get", "list", "watch"}
        for plural in ("schedulingprofiles", "evictionpolicies", "priorityclassmirrors")
    },
    **{
        (GROUP, f"{plural}/status"): {"patch"}
        for plural in ("schedulingprofiles", "evictionpolicies", "priorityclassmirrors")
    },
}
# What the operator cannot run without (see docs/deploy.md for why each is needed).
REQUIRED: dict[tuple[str, str], set[str]] = {
    ("", "pods"): {"list", "watch"},
    ("", "pods/binding"): {"create"},
    ("", "pods/status"): {"patch"},
    ("", "nodes"): {"list", "watch"},
    ("", "namespaces"): {"list", "watch"},
    # PodTopologySpread default constraints (the operator is not ready until these have synced).
    ("", "services"): {"list", "watch"},
    ("", "replicationcontrollers"): {"list", "watch"},
    ("apps", "replicasets"): {"list", "watch"},
    ("apps", "statefulsets"): {"list", "watch"},
    ("events.k8s.io", "events"): {"create", "patch"},
    ("apiextensions.k8s.io", "customresourcedefinitions"): {"list", "watch"},
    # Storage informers, and VolumeBinding's PreBind writes (merge patches).
    ("", "persistentvolumes"): {"list", "watch", "patch"},
    ("", "persistentvolumeclaims"): {"list", "watch", "patch"},
    **{
        ("storage.k8s.io", r): {"list", "watch"}
        for r in (
            "storageclasses",
            "csinodes",
            "csidrivers",
            "csistoragecapacities",
            "volumeattachments",
        )
    },
    ("scheduling.k8s.io", "priorityclasses"): {"list", "watch", "create", "patch", "delete"},
    **{
        (GROUP, plural): {"list", "watch"}
        for plural in ("schedulingprofiles", "evictionpolicies", "priorityclassmirrors")
    },
    **{
        (GROUP, f"{plural}/status"): {"patch"}
        for plural in ("schedulingprofiles", "evictionpolicies", "priorityclassmirrors")
    },
}
KUSTOMIZATION_NAMES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
# Verbs that let a subject grant itself more, or act as someone else.
ESCALATING = {"*", "escalate", "bind", "impersonate", "deletecollection"}


def documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d]


def manifests() -> list[dict[str, Any]]:
    return [
        d for p in sorted(MANIFESTS.glob("*.yaml")) if p.name != "kustomization.yaml" for d in documents(p)
    ]


def one(kind: str, name: str | None = None) -> dict[str, Any]:
    found = [d for d in manifests() if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)]
    assert len(found) == 1, f"expected one {kind} {name or ''}, found {len(found)}"
    return found[0]


def grants(rules: list[dict[str, Any]]) -> dict[tuple[str, str], set[str]]:
    result: dict[tuple[str, str], set[str]] = defaultdict(set)
    for rule in rules:
        for group in rule.get("apiGroups", []):
            for resource in rule.get("resources", []):
                result[(group, resource)] |= set(rule["verbs"])
    return result


# ---- RBAC ---------------------------------------------------------------------------------------


def test_cluster_role_is_within_the_allow_list_and_has_what_is_required() -> None:
    role = one("ClusterRole", "policy-scheduler")
    granted = grants(role["rules"])
    for key, verbs in granted.items():
        assert key in ALLOWED, f"unexpected resource {key}"
        assert verbs <= ALLOWED[key], f"{key}: verbs {sorted(verbs - ALLOWED[key])} not allowed"
    for key, verbs in REQUIRED.items():
        assert verbs <= granted.get(key, set()), f"{key}: missing {sorted(verbs - granted.get(key, set()))}"


@pytest.mark.parametrize("kind", ["ClusterRole", "Role"])
def test_no_wildcards_no_escalation_no_urls(kind: str) -> None:
    for doc in (d for d in manifests() if d["kind"] == kind):
        for rule in doc["rules"]:
            assert "nonResourceURLs" not in rule
            for key in ("apiGroups", "resources", "verbs"):
                assert "*" not in rule[key], f"{doc['metadata']['name']}: wildcard in {key}"
            assert not set(rule["verbs"]) & ESCALATING
            assert not any(r in ("secrets", "configmaps") for r in rule["resources"])


def test_lease_role_is_namespaced_and_limited_to_leases() -> None:
    role = one("Role")
    assert role["metadata"]["namespace"] == NAMESPACE
    assert grants(role["rules"]) == {("coordination.k8s.io", "leases"): {"create", "get", "update"}}
    named = [r for r in role["rules"] if r.get("resourceNames")]
    assert named
    assert all(set(r["verbs"]) <= {"get", "update"} for r in named)
    # The name the Deployment's --lease-name (default) uses.
    args = deployment_args()
    assert all(r["resourceNames"] == [args.lease_name] for r in named)
    assert args.lease_namespace == NAMESPACE


@pytest.mark.parametrize(
    ("binding", "role_kind"), [("ClusterRoleBinding", "ClusterRole"), ("RoleBinding", "Role")]
)
def test_bindings_give_the_roles_to_the_service_account(binding: str, role_kind: str) -> None:
    """Each binding gives one of our roles, or the built-in delegated-auth role, to our account."""
    for doc in (d for d in manifests() if d["kind"] == binding):
        assert doc["roleRef"]["kind"] == role_kind
        if doc["roleRef"]["name"] != "system:auth-delegator":
            one(role_kind, doc["roleRef"]["name"])
        assert doc["subjects"] == [
            {"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": NAMESPACE}
        ]
    one("ServiceAccount", SERVICE_ACCOUNT)


# ---- Deployment, Service ---------------------------------------------------------------------------


def container() -> dict[str, Any]:
    containers = one("Deployment")["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return dict(containers[0])


def container_service_account() -> str:
    name: str = one("Deployment")["spec"]["template"]["spec"]["serviceAccountName"]
    return name


def deployment_args() -> argparse.Namespace:
    """The container's args as `policy-scheduler` would parse them (ENTRYPOINT + args)."""
    return build_parser().parse_args(container()["args"])


def test_deployment_runs_the_operator_with_leader_election() -> None:
    dep = one("Deployment")
    assert dep["metadata"]["namespace"] == NAMESPACE
    assert dep["spec"]["replicas"] == 2
    pod = dep["spec"]["template"]
    assert dep["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
    assert pod["spec"]["serviceAccountName"] == SERVICE_ACCOUNT
    assert pod["spec"].get("schedulerName", "default-scheduler") == "default-scheduler"
    args = deployment_args()
    assert args.command == "run"
    assert args.leader_elect
    assert not args.install_crds
    assert args.kubeconfig is None  # in-cluster service account


def test_deployment_is_locked_down() -> None:
    pod_spec = one("Deployment")["spec"]["template"]["spec"]
    pod_sc = pod_spec["securityContext"]
    assert pod_sc["runAsNonRoot"] is True
    assert isinstance(pod_sc["runAsUser"], int)
    assert pod_sc["runAsUser"] > 0
    assert pod_sc["seccompProfile"] == {"type": "RuntimeDefault"}
    c = container()
    sc = c["securityContext"]
    assert sc["readOnlyRootFilesystem"] is True
    assert sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"] == {"drop": ["ALL"]}
    assert not pod_spec.get("hostNetwork")
    assert not sc.get("privileged")
    # /tmp is the only writable path, and HOME points there in the image.
    mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
    volumes = {v["name"]: v for v in pod_spec["volumes"]}
    assert mounts == {"/tmp": "tmp"}
    assert "emptyDir" in volumes["tmp"]
    assert c["resources"]["requests"]["cpu"]
    assert c["resources"]["requests"]["memory"]
    assert c["resources"]["limits"]["memory"]


def test_probes_and_secure_port_match_the_server() -> None:
    c = container()
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    args = deployment_args()
    assert ports == {PORT_NAME: args.secure_port}
    assert args.insecure_port == 0  # never plain HTTP in a cluster
    for probe, path in (("readinessProbe", "/readyz"), ("livenessProbe", "/livez")):
        assert c[probe]["httpGet"] == {"path": path, "port": PORT_NAME, "scheme": "HTTPS"}
        assert PathPatterns(args.authorization_always_allow_paths).match(path), "probes carry no token"
    from policy_scheduler.kube.serving.server import make_app

    routes = {r.resource.canonical for r in make_app(lambda: True, None, None).router.routes() if r.resource}
    assert {"/readyz", "/livez", "/metrics"} <= routes
    svc = one("Service")
    assert (
        svc["spec"]["selector"].items() <= one("Deployment")["spec"]["template"]["metadata"]["labels"].items()
    )
    assert [(p["name"], p["targetPort"]) for p in svc["spec"]["ports"]] == [(PORT_NAME, PORT_NAME)]


def test_network_policy_admits_only_the_secure_port() -> None:
    policy = one("NetworkPolicy")
    labels = one("Deployment")["spec"]["template"]["metadata"]["labels"]
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= labels.items()
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    assert policy["spec"]["ingress"] == [{"ports": [{"port": PORT_NAME, "protocol": "TCP"}]}]


def test_operator_may_delegate_authentication_and_authorization() -> None:
    bindings = [b for b in documents(MANIFESTS / "rbac.yaml") if b["kind"] == "ClusterRoleBinding"]
    delegators = [b for b in bindings if b["roleRef"]["name"] == "system:auth-delegator"]
    assert [s["name"] for b in delegators for s in b["subjects"]] == [container_service_account()]
    assert container_service_account() == SERVICE_ACCOUNT


def test_prometheus_example_scrapes_as_kube_prometheus_scrapes_kube_scheduler() -> None:
    docs = documents(MANIFESTS / "prometheus" / "servicemonitor.yaml")
    monitor = next(d for d in docs if d["kind"] == "ServiceMonitor")
    (endpoint,) = monitor["spec"]["endpoints"]
    assert (endpoint["port"], endpoint["scheme"]) == (PORT_NAME, "https")
    assert endpoint["bearerTokenFile"].endswith("/serviceaccount/token")
    role = next(d for d in docs if d["kind"] == "ClusterRole")
    assert role["rules"] == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]


def test_image_tag_is_the_package_version_everywhere() -> None:
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    image = f"policy-scheduler:{version}"
    assert container()["image"] == image
    assert container()["imagePullPolicy"] == "IfNotPresent"
    assert f'IMAGE="${{IMAGE:-{image}}}"' in (ROOT / "e2e/kind/up.sh").read_text()
    assert f"docker build -t {image} ." in (ROOT / "Dockerfile").read_text()


def test_namespace_enforces_restricted_pod_security() -> None:
    ns = one("Namespace", NAMESPACE)
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"


# ---- kustomization ------------------------------------------------------------------------------------


def test_kustomization_lists_every_manifest_and_the_crds() -> None:
    kustomization = yaml.safe_load((MANIFESTS / "kustomization.yaml").read_text())
    resources = kustomization["resources"]
    for entry in resources:
        assert (MANIFESTS / entry).exists(), f"{entry} does not exist"
    listed_files = {r for r in resources if (MANIFESTS / r).is_file()}
    assert listed_files == {p.name for p in MANIFESTS.glob("*.yaml")} - {"kustomization.yaml"}
    assert "../crds" in resources
    assert "podgroup-crd" in resources


# ---- scheduler-plugins' PodGroup CRD ------------------------------------------------------------------

PODGROUP_DIR = MANIFESTS / "podgroup-crd"
PODGROUP_FILE = PODGROUP_DIR / "scheduling.x-k8s.io_podgroups.yaml"
# manifests/coscheduling/crd.yaml of kubernetes-sigs/scheduler-plugins at tag v0.34.7.
UPSTREAM_BLOB = "8e6106d36d9daf553195478af21e0e928796b901"


def test_podgroup_crd_is_scheduler_plugins_file_unchanged() -> None:
    text = PODGROUP_FILE.read_text(encoding="utf-8")
    # The provenance comment, then the upstream text byte for byte.
    header = "".join(itertools.takewhile(lambda line: line.startswith("#"), text.splitlines(keepends=True)))
    body = text[len(header) :].encode()
    assert f"git blob {UPSTREAM_BLOB}" in header
    assert hashlib.sha1(b"blob %d\0" % len(body) + body).hexdigest() == UPSTREAM_BLOB
    assert yaml.safe_load((PODGROUP_DIR / "kustomization.yaml").read_text())["resources"] == [
        PODGROUP_FILE.name
    ]


def schema_types(schema: dict[str, Any], path: str = "") -> Iterator[tuple[str, Any]]:
    yield path, schema.get("type")
    for name, sub in (schema.get("properties") or {}).items():
        yield from schema_types(sub, f"{path}.{name}")
    if isinstance(schema.get("additionalProperties"), dict):
        yield from schema_types(schema["additionalProperties"], f"{path}{{}}")


def test_dev_podgroup_crd_keeps_every_upstream_field() -> None:
    """--install-crds (development) installs our own PodGroup CRD over whatever is there: it must
    serve every field of the upstream one, with the same types, at the same group and version."""
    from policy_scheduler.apiobjects.podgroup_crd import podgroup_crd

    upstream = documents(PODGROUP_FILE)[0]["spec"]
    ours = podgroup_crd()["spec"]
    for field in ("group", "names", "scope"):
        assert ours[field] == upstream[field], field
    (up_version,) = upstream["versions"]
    (our_version,) = ours["versions"]
    for field in ("name", "served", "storage", "subresources"):
        assert our_version[field] == up_version[field], field
    our_types = dict(schema_types(our_version["schema"]["openAPIV3Schema"]))
    for path, kind in schema_types(up_version["schema"]["openAPIV3Schema"]):
        assert our_types.get(path, "missing") == kind, path


def test_crd_directory_is_a_kustomization_listing_every_crd() -> None:
    crds = ROOT / "crds"
    found = [crds / name for name in KUSTOMIZATION_NAMES if (crds / name).exists()]
    assert found, (
        "kustomize only accepts a directory that is itself a kustomization, so `kubectl apply -k "
        "manifests/` needs crds/kustomization.yml listing crds/*.yaml (.yml: tests/policy/test_crds.py wants "
        "only CRDs in crds/*.yaml); see docs/deploy.md"
    )
    listed = set(yaml.safe_load(found[0].read_text())["resources"])
    assert listed == {p.name for p in crds.glob("*.yaml")} - set(KUSTOMIZATION_NAMES)


# ---- Dockerfile ---------------------------------------------------------------------------------------


def dockerfile_stages() -> list[list[str]]:
    """Instructions (continuation lines joined, comments dropped) per build stage."""
    text = re.sub(r"\\\n", " ", (ROOT / "Dockerfile").read_text())
    stages: list[list[str]] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.upper().startswith("FROM "):
            stages.append([])
        assert stages, "instruction before FROM"
        stages[-1].append(line)
    return stages


def test_dockerfile_is_multi_stage_slim_python_311() -> None:
    stages = dockerfile_stages()
    assert len(stages) == 2
    assert all(s[0].split()[1].startswith("python:3.11-slim") for s in stages)
    builder = " ".join(stages[0])
    assert "pip wheel" in builder


def test_dockerfile_final_stage_runs_as_numeric_non_root_without_build_tools() -> None:
    final = dockerfile_stages()[-1]
    users = [line.split(maxsplit=1)[1] for line in final if line.upper().startswith("USER ")]
    assert users, users
    assert re.fullmatch(r"[1-9]\d*(:[1-9]\d*)?", users[-1]), users
    assert users[-1].split(":")[0] == str(
        one("Deployment")["spec"]["template"]["spec"]["securityContext"]["runAsUser"]
    )
    text = " ".join(final).lower()
    for tool in ("gcc", "g++", "build-essential", "make ", "apt-get install", "git "):
        assert tool not in text, f"{tool!r} in the final stage"
    assert "--no-index" in text
    assert "copy operator" not in text
    assert 'ENTRYPOINT ["policy-scheduler"]' in final
    assert 'CMD ["run"]' in final
    env = " ".join(line for line in final if line.upper().startswith("ENV "))
    assert "HOME=/tmp" in env
    assert "PYTHONDONTWRITEBYTECODE=1" in env


def test_dockerignore_keeps_the_context_small() -> None:
    lines = [line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()]
    assert "*" in lines
    assert "!pyproject.toml" in lines
    assert "!operator" in lines


# ---- health checks -------------------------------------------------------------------------------------


HEALTH = MANIFESTS / "health"


def test_argocd_configmap_embeds_the_lua_script_for_every_kind() -> None:
    lua = (HEALTH / "policy-scheduler-health.lua").read_text()
    cm = documents(HEALTH / "argocd-cm.yaml")[0]
    keys = {
        f"resource.customizations.health.{GROUP}_{kind}"
        for kind in ("SchedulingProfile", "EvictionPolicy", "PriorityClassMirror")
    }
    assert set(cm["data"]) == keys
    assert all(value == lua for value in cm["data"].values())


def _obj(generation: int, observed: int | None, **conditions: str) -> dict[str, Any]:
    obj: dict[str, Any] = {"metadata": {"generation": generation}}
    if observed is not None:
        obj["status"] = {
            "observedGeneration": observed,
            "conditions": [{"type": t, "status": s, "message": f"{t} is {s}"} for t, s in conditions.items()],
        }
    return obj


@pytest.mark.parametrize(
    ("obj", "health"),
    [
        (_obj(1, None), "Progressing"),
        (_obj(2, 1, Accepted="True", Ready="True"), "Progressing"),
        (_obj(2, 2, Accepted="True", Ready="True", Degraded="False"), "Healthy"),
        (_obj(2, 2, Accepted="False", Ready="True", Degraded="True"), "Degraded"),
        (_obj(2, 2, Accepted="True", Ready="False", Degraded="False"), "Progressing"),
        # A rejected generation with the last accepted one in force: Stalled, as kstatus reads it.
        (_obj(2, 2, Accepted="False", Ready="True", Stalled="True"), "Degraded"),
        (_obj(2, 2, Accepted="True", Ready="True", Stalled="False", Degraded="False"), "Healthy"),
        # A profile whose EvictionPolicy is missing: it schedules but preempts nothing.
        (_obj(1, 1, Accepted="True", Ready="True", Stalled="False", Degraded="True"), "Degraded"),
        (_obj(1, 1, Accepted="True"), "Healthy"),  # EvictionPolicy
        (_obj(1, 1, Accepted="True", Synced="False", Ready="False"), "Degraded"),  # PriorityClassMirror
        (_obj(1, 1, Accepted="True", Synced="True", Ready="True"), "Healthy"),
    ],
)
def test_argocd_lua_health(obj: dict[str, Any], health: str) -> None:
    lupa = pytest.importorskip("lupa")  # not a project dependency: runs where it is installed
    runtime = lupa.LuaRuntime(unpack_returned_tuples=True)
    to_lua = runtime.eval("function(s) return s end")
    decode = runtime.execute(_JSON_DECODER)
    script = (HEALTH / "policy-scheduler-health.lua").read_text()
    fn = runtime.eval(f"function(obj)\n{script}\nend")
    result = fn(decode(to_lua(json.dumps(obj))))
    assert result["status"] == health
    assert result["message"]


# A tiny JSON decoder in Lua, so the script sees tables exactly as Argo CD builds them.
_JSON_DECODER = r"""
local function decode(s)
  local pos = 1
  local function ws() pos = s:find("[^%s]", pos) or #s + 1 end
  local value
  local function str()
    local out, i = {}, pos + 1
    while true do
      local c = s:sub(i, i)
      if c == '"' then pos = i + 1; return table.concat(out) end
      if c == "\\" then i = i + 1; c = s:sub(i, i) end
      out[#out + 1] = c; i = i + 1
    end
  end
  function value()
    ws()
    local c = s:sub(pos, pos)
    if c == "{" then
      local t = {}; pos = pos + 1; ws()
      if s:sub(pos, pos) == "}" then pos = pos + 1; return t end
      while true do
        ws(); local k = str(); ws(); pos = pos + 1
        t[k] = value(); ws()
        local d = s:sub(pos, pos); pos = pos + 1
        if d == "}" then return t end
      end
    elseif c == "[" then
      local t = {}; pos = pos + 1; ws()
      if s:sub(pos, pos) == "]" then pos = pos + 1; return t end
      while true do
        t[#t + 1] = value(); ws()
        local d = s:sub(pos, pos); pos = pos + 1
        if d == "]" then return t end
      end
    elseif c == '"' then return str()
    elseif s:sub(pos, pos + 3) == "true" then pos = pos + 4; return true
    elseif s:sub(pos, pos + 4) == "false" then pos = pos + 5; return false
    elseif s:sub(pos, pos + 3) == "null" then pos = pos + 4; return nil
    else
      local num = s:match("^-?[%d.eE+-]+", pos); pos = pos + #num; return tonumber(num)
    end
  end
  return value()
end
return decode
"""


# ---- e2e/kind -------------------------------------------------------------------------------------------


def test_kind_files() -> None:
    config = yaml.safe_load((ROOT / "e2e/kind/kind-config.yaml").read_text())
    assert config["kind"] == "Cluster"
    assert config["apiVersion"] == "kind.x-k8s.io/v1alpha4"
    script = ROOT / "e2e/kind/up.sh"
    assert script.stat().st_mode & 0o111, "up.sh must be executable"
    text = script.read_text()
    assert text.startswith("#!/usr/bin/env bash\n")
    assert "set -euo pipefail" in text
    for step in ("docker build", "kind load docker-image", "kubectl apply -k", "examples/"):
        assert step in text


# ---- examples ---------------------------------------------------------------------------------------------


def example_objects(*patterns: str) -> Iterator[tuple[Path, dict[str, Any]]]:
    for pattern in patterns:
        for path in sorted(EXAMPLES.glob(pattern)):
            for doc in documents(path):
                yield path, doc


def test_every_example_cr_validates() -> None:
    seen: dict[str, list[str]] = defaultdict(list)
    for path, doc in example_objects("*.yaml"):
        kind, name = doc["kind"], doc["metadata"]["name"]
        assert doc["apiVersion"] == f"{GROUP}/v1alpha1", f"{path.name}: {kind} {name}"
        if kind == "SchedulingProfile":
            parse_profile_spec(doc["spec"], path=f"{path.name}: spec")
        elif kind == "EvictionPolicy":
            parse_model(EvictionPolicySpec, doc["spec"], f"{path.name}: spec")
        elif kind == "PriorityClassMirror":
            parse_model(PriorityClassMirrorSpec, doc["spec"], f"{path.name}: spec")
            assert name_problem(name) is None
        else:
            pytest.fail(
                f"{path.name}: {kind} does not belong in examples/ (workloads go in examples/workloads/)"
            )
        seen[kind].append(name)
    assert len(seen["SchedulingProfile"]) == 4
    assert sorted(seen["EvictionPolicy"]) == ["best-effort", "dry-run", "enforce-budgets", "rate-limited"]
    assert sorted(seen["PriorityClassMirror"]) == ["example-high", "example-low"]


def test_example_profiles_work_together_and_reference_existing_policies() -> None:
    objects = [doc for _, doc in example_objects("*.yaml")]
    profiles = [d for d in objects if d["kind"] == "SchedulingProfile"]
    policies = {d["metadata"]["name"] for d in objects if d["kind"] == "EvictionPolicy"}
    configs = compile_profile_objects(profiles, eviction_policy_names=policies)
    assert {c.eviction_policy_name for c in configs} == policies  # each policy is shown by a profile


def test_every_workload_uses_an_example_profile_and_priority_class() -> None:
    objects = [doc for _, doc in example_objects("*.yaml")]
    schedulers = {d["spec"]["schedulerName"] for d in objects if d["kind"] == "SchedulingProfile"}
    classes = {d["metadata"]["name"] for d in objects if d["kind"] == "PriorityClassMirror"}
    used: set[str] = set()
    for path, doc in example_objects("workloads/*.yaml"):
        assert doc["kind"] in {"Namespace", "Deployment", "PodDisruptionBudget"}, path.name
        if doc["kind"] == "Namespace":
            continue
        assert doc["metadata"]["namespace"] == "policy-scheduler-examples"
        if doc["kind"] != "Deployment":
            continue
        pod_spec = doc["spec"]["template"]["spec"]
        assert pod_spec["schedulerName"] in schedulers, path.name
        assert pod_spec.get("priorityClassName", next(iter(classes))) in classes
        used.add(pod_spec["schedulerName"])
    assert used == schedulers


def test_simulated_pods_use_the_mirrors_values() -> None:
    values = {d["spec"]["value"] for _, d in example_objects("priority-mirrors.yaml")}
    for _, doc in example_objects("simulate/*.yaml"):
        if doc["kind"] == "Pod":
            assert doc["spec"].get("priority", 0) in values | {0}


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_simulate_runs_on_the_examples(version: KubernetesVersion) -> None:
    from policy_scheduler.simulate.profiles import resolve_scenario_profiles
    from policy_scheduler.simulate.run import simulate
    from policy_scheduler.simulate.scenario import load_scenario

    files = [
        EXAMPLES / "simulate/cluster.yaml",
        *sorted(EXAMPLES.glob("*.yaml")),
        EXAMPLES / "simulate/pods.yaml",
    ]
    scenario = load_scenario(files)
    profiles = resolve_scenario_profiles(scenario, Features(version))
    outcomes = {o.name: o for o in simulate(scenario, profiles, seed=0)}
    pending = [name for name, o in outcomes.items() if not name.startswith("filler") and not o.node]
    assert pending == []
    # MostAllocated packs: the fullest node first (one with a web pod, which then has room for
    # three), the rest on one more node; spreading would use four. Every release alike.
    assert sorted(Counter(outcomes[f"batch-{i}"].node for i in range(4)).values()) == [1, 3]
    assert {outcomes[f"trainer-{i}"].node for i in range(2)} <= {"node-4", "node-5"}  # the GPU nodes
    assert outcomes["urgent-0"].preempted  # through a filler pod
