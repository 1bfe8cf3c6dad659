"""The Helm chart (charts/policy-scheduler) renders the kustomize base's objects, and its values work.

Runs the real helm (built from its Go module, cached like the control plane) and the control
plane's kubectl (`kubectl kustomize`); e2e/test_install.py installs both into a cluster.
"""

from __future__ import annotations

import json
import os
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from policy_scheduler.app.cli import build_parser
from policy_scheduler.devcluster.build import build_all, missing_binaries
from policy_scheduler.devcluster.tools import ensure_helm
from policy_scheduler.devcluster.versions import bin_dir
from policy_scheduler.policy.crdgen import stale_crds
from tests.paths import REPO

ROOT = REPO
CHART = ROOT / "charts" / "policy-scheduler"
MANIFESTS = ROOT / "manifests"
PODGROUP_CRD = "scheduling.x-k8s.io_podgroups.yaml"
NAMESPACE = "policy-scheduler"

# The chart's additions to the base, and the only differences the comparison forgives: Helm's
# conventional labels (also in selectors, as app.kubernetes.io/instance), and the annotation that
# keeps the CRDs, and so every policy, through `helm uninstall`.
HELM_LABELS = frozenset(
    {
        "helm.sh/chart",
        "app.kubernetes.io/instance",
        "app.kubernetes.io/version",
        "app.kubernetes.io/managed-by",
    }
)
KEEP_ANNOTATION = "helm.sh/resource-policy"

Key = tuple[str, str, str]  # kind, namespace, name


@pytest.fixture(scope="module")
def helm(pytestconfig: pytest.Config) -> Path:
    # The first build takes minutes: show its progress instead of capturing it.
    with pytestconfig.pluginmanager.getplugin("capturemanager").global_and_fixture_disabled():
        return ensure_helm()


@pytest.fixture(scope="module")
def kubectl(pytestconfig: pytest.Config) -> Path:
    if missing_binaries():
        with pytestconfig.pluginmanager.getplugin("capturemanager").global_and_fixture_disabled():
            build_all()
    return bin_dir() / "kubectl"


def run(*cmd: str | Path) -> str:
    result = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, f"{' '.join(map(str, cmd))}: {result.stderr}"
    return result.stdout


def objects(text: str) -> dict[Key, dict[str, Any]]:
    found: dict[Key, dict[str, Any]] = {}
    for doc in yaml.safe_load_all(text):
        if not doc:
            continue
        meta = doc["metadata"]
        key = (doc["kind"], meta.get("namespace", ""), meta["name"])
        assert key not in found, f"{key} rendered twice"
        found[key] = doc
    return found


def kustomize(kubectl: Path, directory: Path) -> dict[Key, dict[str, Any]]:
    return objects(run(kubectl, "kustomize", directory))


def helm_template(
    helm: Path, *values: str, release: str = "policy-scheduler", namespace: str = NAMESPACE
) -> dict[Key, dict[str, Any]]:
    sets = [arg for value in values for arg in ("--set", value)]
    return objects(run(helm, "template", release, CHART, "-n", namespace, "--include-crds", *sets))


def helm_template_error(helm: Path, *values: str) -> str:
    sets = [arg for value in values for arg in ("--set", value)]
    result = subprocess.run(
        [str(helm), "template", "policy-scheduler", str(CHART), *sets],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode != 0, "helm template accepted the values"
    return result.stderr


def without_helm_additions(obj: Any) -> Any:
    """`obj` without HELM_LABELS anywhere (labels and selectors) and without KEEP_ANNOTATION."""
    if isinstance(obj, list):
        return [without_helm_additions(item) for item in obj]
    if not isinstance(obj, dict):
        return obj
    out = {k: without_helm_additions(v) for k, v in obj.items() if k not in HELM_LABELS}
    annotations = (out.get("metadata") or {}).get("annotations")
    if isinstance(annotations, dict) and KEEP_ANNOTATION in annotations:
        rest = {k: v for k, v in annotations.items() if k != KEEP_ANNOTATION}
        out["metadata"] = {k: v for k, v in out["metadata"].items() if k != "annotations"}
        if rest:
            out["metadata"]["annotations"] = rest
    return out


def assert_same_objects(helm_objects: dict[Key, dict[str, Any]], base: dict[Key, dict[str, Any]]) -> None:
    assert sorted(helm_objects) == sorted(base)
    for key, expected in base.items():
        assert without_helm_additions(helm_objects[key]) == expected, f"{key} differs"


def labels(obj: dict[str, Any]) -> dict[str, str]:
    return dict(obj["metadata"].get("labels") or {})


def deployment(rendered: dict[Key, dict[str, Any]]) -> dict[str, Any]:
    (found,) = [obj for key, obj in rendered.items() if key[0] == "Deployment"]
    return found


def pod_spec(rendered: dict[Key, dict[str, Any]]) -> dict[str, Any]:
    spec: dict[str, Any] = deployment(rendered)["spec"]["template"]["spec"]
    return spec


def container_args(rendered: dict[Key, dict[str, Any]]) -> list[str]:
    args: list[str] = pod_spec(rendered)["containers"][0]["args"]
    return args


# ---- agreement with the kustomize base ----------------------------------------------------------


def test_default_values_render_the_kustomize_base(helm: Path, kubectl: Path) -> None:
    base = kustomize(kubectl, MANIFESTS)
    # Helm does not own its release namespace by default (namespace.create, next test).
    namespace = base.pop(("Namespace", "", NAMESPACE))
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    assert_same_objects(helm_template(helm), base)


def test_namespace_create_renders_the_base_namespace(helm: Path, kubectl: Path) -> None:
    assert_same_objects(helm_template(helm, "namespace.create=true"), kustomize(kubectl, MANIFESTS))


def test_the_comparison_forgives_only_what_helm_adds(helm: Path, kubectl: Path) -> None:
    """Every templated object carries all of Helm's labels and the base none, so removing them
    hides no difference; the PodGroup CRD comes from the chart's crds/ as it is."""
    base = kustomize(kubectl, MANIFESTS)
    for key, obj in base.items():
        assert not HELM_LABELS & labels(obj).keys(), key
        assert KEEP_ANNOTATION not in (obj["metadata"].get("annotations") or {}), key
    podgroups = ("CustomResourceDefinition", "", "podgroups.scheduling.x-k8s.io")
    for key, obj in helm_template(helm, "namespace.create=true").items():
        if key == podgroups:
            assert obj == base[key]
            continue
        assert labels(obj).keys() >= HELM_LABELS, key
        assert labels(obj)["app.kubernetes.io/managed-by"] == "Helm"
        is_crd = key[0] == "CustomResourceDefinition"
        assert (KEEP_ANNOTATION in (obj["metadata"].get("annotations") or {})) == is_crd, key


def test_chart_copies_of_the_crds_are_current() -> None:
    assert stale_crds(CHART / "files" / "crds") == [], "run: make crds"
    assert sorted(p.name for p in (CHART / "files" / "crds").iterdir()) == sorted(
        p.name for p in (ROOT / "crds").glob("*.yaml")
    )
    assert [p.name for p in (CHART / "crds").iterdir()] == [PODGROUP_CRD]
    chart_copy = (CHART / "crds" / PODGROUP_CRD).read_text(encoding="utf-8")
    assert chart_copy == (MANIFESTS / "podgroup-crd" / PODGROUP_CRD).read_text(encoding="utf-8"), (
        "run: make crds"
    )


def test_chart_version_is_the_package_version() -> None:
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart["appVersion"] == chart["version"] == version


def test_base_without_the_podgroup_crd_as_docs_deploy_shows(kubectl: Path, tmp_path: Path) -> None:
    """The overlay docs/deploy.md gives for a cluster where another install owns the PodGroup CRD."""
    (tmp_path / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kustomize.config.k8s.io/v1beta1",
                "kind": "Kustomization",
                "resources": [os.path.relpath(MANIFESTS, tmp_path)],  # kustomize: relative only
                "patches": [
                    {
                        "patch": "$patch: delete\napiVersion: apiextensions.k8s.io/v1\n"
                        "kind: CustomResourceDefinition\nmetadata:\n  name: podgroups.scheduling.x-k8s.io\n"
                    }
                ],
            }
        )
    )
    base = kustomize(kubectl, MANIFESTS)
    del base[("CustomResourceDefinition", "", "podgroups.scheduling.x-k8s.io")]
    assert kustomize(kubectl, tmp_path) == base


# ---- values -------------------------------------------------------------------------------------


def test_release_name_prefixes_every_name_and_the_release_namespace_holds_everything(helm: Path) -> None:
    rendered = helm_template(helm, release="e2e", namespace="elsewhere")
    fullname = "e2e-policy-scheduler"
    for (kind, namespace, name), obj in rendered.items():
        if kind == "CustomResourceDefinition":
            continue
        assert name.startswith(fullname), (kind, name)
        assert namespace == ("" if kind in ("ClusterRole", "ClusterRoleBinding") else "elsewhere"), (
            kind,
            name,
        )
        assert labels(obj)["app.kubernetes.io/instance"] == "e2e"
    for binding in ("ClusterRoleBinding", "RoleBinding"):
        for obj in (o for k, o in rendered.items() if k[0] == binding):
            assert obj["subjects"] == [{"kind": "ServiceAccount", "name": fullname, "namespace": "elsewhere"}]
            # One of the chart's roles, or the built-in role for delegated authentication.
            assert obj["roleRef"]["name"] in {k[2] for k in rendered} | {"system:auth-delegator"}
    args = build_parser().parse_args(container_args(rendered))
    assert (args.lease_namespace, args.lease_name, args.leader_elect) == (
        "elsewhere",
        "policy-scheduler",
        True,
    )
    assert pod_spec(rendered)["serviceAccountName"] == fullname
    override = helm_template(helm, "fullnameOverride=ps", release="e2e")
    assert {k[2] for k in override if k[0] != "CustomResourceDefinition"} == {
        "ps",
        "ps-metrics",
        "ps-leader-election",
        "ps-auth-delegator",
    }


def test_deployment_values(helm: Path) -> None:
    rendered = helm_template(
        helm,
        "image.repository=registry.example/ps",
        "image.tag=1.2.3",
        "image.pullPolicy=Always",
        "replicas=3",
        "resources.requests.cpu=2",
        "nodeSelector.pool=system",
        "tolerations[0].key=dedicated",
        "tolerations[0].operator=Exists",
        "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
        ".matchExpressions[0].key=zone",
        "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
        ".matchExpressions[0].operator=Exists",
        "podSecurityContext.runAsUser=1000",
        "priorityClassName=system-cluster-critical",
        "extraArgs={--profile-selector,shard=a,--event-qps,100}",
        "leaderElection.leaseName=other-lease",
    )
    dep = deployment(rendered)
    assert dep["spec"]["replicas"] == 3
    spec = pod_spec(rendered)
    container = spec["containers"][0]
    assert container["image"] == "registry.example/ps:1.2.3"
    assert container["imagePullPolicy"] == "Always"
    assert container["resources"]["requests"] == {"cpu": 2, "memory": "256Mi"}
    assert spec["nodeSelector"] == {"pool": "system"}
    assert spec["tolerations"] == [{"key": "dedicated", "operator": "Exists"}]
    terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms["nodeSelectorTerms"][0]["matchExpressions"] == [{"key": "zone", "operator": "Exists"}]
    assert spec["securityContext"]["runAsUser"] == 1000
    assert spec["securityContext"]["runAsNonRoot"] is True  # a --set merges into the defaults
    assert spec["priorityClassName"] == "system-cluster-critical"
    args = build_parser().parse_args(container_args(rendered))
    assert (args.profile_selector, args.event_qps, args.lease_name) == ("shard=a", 100.0, "other-lease")
    (role,) = [o for k, o in rendered.items() if k[0] == "Role"]
    assert [r.get("resourceNames") for r in role["rules"]] == [None, ["other-lease"]]


def test_leader_election_off_needs_one_replica(helm: Path) -> None:
    assert "needs replicas: 1" in helm_template_error(helm, "leaderElection.enabled=false")
    rendered = helm_template(helm, "leaderElection.enabled=false", "replicas=1")
    assert not build_parser().parse_args(container_args(rendered)).leader_elect
    assert not [k for k in rendered if k[0] in ("Role", "RoleBinding")]


def test_crds_can_be_left_out_or_deleted_with_the_release(helm: Path) -> None:
    crds = {
        k[2]
        for k, o in helm_template(helm, "crds.install=false").items()
        if k[0] == "CustomResourceDefinition"
    }
    assert crds == {"podgroups.scheduling.x-k8s.io"}  # crds/: `helm install --skip-crds` leaves it out
    for key, obj in helm_template(helm, "crds.keep=false").items():
        assert KEEP_ANNOTATION not in (obj["metadata"].get("annotations") or {}), key


def test_existing_service_account(helm: Path) -> None:
    assert "serviceAccount.name is required" in helm_template_error(helm, "serviceAccount.create=false")
    rendered = helm_template(helm, "serviceAccount.create=false", "serviceAccount.name=mine")
    assert not [k for k in rendered if k[0] == "ServiceAccount"]
    assert pod_spec(rendered)["serviceAccountName"] == "mine"


@pytest.mark.parametrize(
    ("value", "field"),
    [
        ("replicas=two", "replicas"),
        ("image.pullPolicy=Sometimes", "pullPolicy"),
        ("extraArgs=--x", "extraArgs"),
    ],
)
def test_bad_values_are_refused_naming_the_field(helm: Path, value: str, field: str) -> None:
    assert field in helm_template_error(helm, value)


def test_values_schema_documents_every_top_level_value() -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    schema = json.loads((CHART / "values.schema.json").read_text())
    assert schema["additionalProperties"] is False
    assert set(schema["properties"]) == set(values)
