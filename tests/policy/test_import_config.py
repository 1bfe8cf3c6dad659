"""import-config: KubeSchedulerConfiguration -> SchedulingProfile manifests."""

from __future__ import annotations

import textwrap
from typing import Any

import pytest
import yaml

from policy_scheduler.policy.compile import compile_profile_objects, parse_profile_spec
from policy_scheduler.policy.errors import PolicyError
from policy_scheduler.policy.importconfig import import_config, object_name
from policy_scheduler.scheduler.versioning.features import Features
from policy_scheduler.scheduler.versioning.version import V1_35, V1_36, V1_37, KubernetesVersion

HEADER = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


def config(body: str = "") -> str:
    return HEADER + textwrap.dedent(body)


def errors_of(text: str) -> list[tuple[str, str]]:
    with pytest.raises(PolicyError) as info:
        import_config(text)
    return info.value.pairs


def test_no_profiles_means_the_default_profile() -> None:
    assert import_config(config()) == [
        {
            "apiVersion": "scheduling.policy-scheduler.io/v1alpha1",
            "kind": "SchedulingProfile",
            "metadata": {"name": "default-scheduler"},
            "spec": {"schedulerName": "default-scheduler"},
        }
    ]


def test_single_profile_without_name_is_the_default_scheduler() -> None:
    (manifest,) = import_config(config("profiles:\n- percentageOfNodesToScore: 20\n"))
    assert manifest["spec"] == {"schedulerName": "default-scheduler", "percentageOfNodesToScore": 20}


FULL = config("""\
    parallelism: 32
    leaderElection: {leaderElect: true, resourceNamespace: kube-system}
    clientConnection: {kubeconfig: /etc/kubernetes/scheduler.conf}
    enableProfiling: false
    delayCacheUntilActive: true
    percentageOfNodesToScore: 40
    podInitialBackoffSeconds: 2
    podMaxBackoffSeconds: 30
    profiles:
    - schedulerName: default-scheduler
    - schedulerName: bin-packing
      percentageOfNodesToScore: 100
      plugins:
        multiPoint:
          enabled: [{name: NodeResourcesFit, weight: 5}]
        score:
          disabled: [{name: NodeResourcesBalancedAllocation}]
      pluginConfig:
      - name: NodeResourcesFit
        args:
          apiVersion: kubescheduler.config.k8s.io/v1
          kind: NodeResourcesFitArgs
          scoringStrategy:
            type: MostAllocated
            resources: [{name: cpu, weight: 1}, {name: memory, weight: 1}]
""")


def test_profiles_carry_over_with_top_level_fields() -> None:
    manifests = import_config(FULL)
    assert [m["metadata"]["name"] for m in manifests] == ["default-scheduler", "bin-packing"]
    assert manifests[0]["spec"] == {
        "schedulerName": "default-scheduler",
        "percentageOfNodesToScore": 40,
        "podInitialBackoffSeconds": 2,
        "podMaxBackoffSeconds": 30,
    }
    source = yaml.safe_load(FULL)["profiles"][1]
    # The profile's own fields are unchanged; only the missing top-level ones are added.
    assert manifests[1]["spec"] == {**source, "podInitialBackoffSeconds": 2, "podMaxBackoffSeconds": 30}


def test_output_is_accepted_as_scheduling_profiles() -> None:
    manifests = yaml.safe_load_all(yaml.safe_dump_all(import_config(FULL)))
    configs = compile_profile_objects(list(manifests))
    assert [c.scheduler_name for c in configs] == ["default-scheduler", "bin-packing"]
    assert configs[1].percentage_of_nodes_to_score == 100
    assert configs[1].plugin_config["NodeResourcesFit"]["scoringStrategy"]["type"] == "MostAllocated"


@pytest.mark.parametrize(
    ("scheduler_name", "object_name_"),
    [
        ("default-scheduler", "default-scheduler"),
        ("batch.example.com", "batch-example-com"),
        ("a..b", "a-b"),
        ("x" * 70, "x" * 54 + "-c71bd109"),  # truncated, plus a hash of the full name
    ],
)
def test_object_names_are_dns_labels(scheduler_name: str, object_name_: str) -> None:
    assert object_name(scheduler_name) == object_name_
    assert len(object_name_) <= 63


def test_colliding_object_names_get_a_suffix() -> None:
    manifests = import_config(
        config("profiles:\n- schedulerName: a.b\n- schedulerName: a-b\n- schedulerName: a-b-2\n")
    )
    assert [m["metadata"]["name"] for m in manifests] == ["a-b", "a-b-2", "a-b-2-2"]
    assert [m["spec"]["schedulerName"] for m in manifests] == ["a.b", "a-b", "a-b-2"]


ERRORS: list[tuple[str, str, str, str]] = [
    ("invalid YAML", "profiles: [", "", "not valid YAML"),
    ("not a mapping", "- a\n- b\n", "", "must be a KubeSchedulerConfiguration object"),
    (
        "wrong apiVersion",
        "apiVersion: kubescheduler.config.k8s.io/v1beta3\nkind: KubeSchedulerConfiguration\n",
        "apiVersion",
        'must be "kubescheduler.config.k8s.io/v1"',
    ),
    (
        "wrong kind",
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: Policy\n",
        "kind",
        'must be "KubeSchedulerConfiguration"',
    ),
    (
        "unknown top-level field",
        config("percentOfNodesToScore: 5\n"),
        "percentOfNodesToScore",
        "unknown field",
    ),
    (
        "extenders",
        config("extenders: [{urlPrefix: 'http://x', filterVerb: filter}]\n"),
        "extenders",
        "not supported",
    ),
    ("profiles not a list", config("profiles: {schedulerName: a}\n"), "profiles", "must be a list"),
    ("profile not an object", config("profiles: [a]\n"), "profiles[0]", "must be an object"),
    (
        "unnamed profile among several",
        config("profiles: [{schedulerName: a}, {}]\n"),
        "profiles[1].schedulerName",
        "required when there are several profiles",
    ),
    (
        "duplicate schedulerName",
        config("profiles: [{schedulerName: a}, {schedulerName: a}]\n"),
        "profiles[1].schedulerName",
        '"a" is already used',
    ),
    (
        "unknown profile field",
        config("profiles: [{schedulerName: a, plugin: {}}]\n"),
        "profiles[0].plugin",
        "unknown field",
    ),
    (
        "unknown plugin",
        config("profiles: [{plugins: {score: {enabled: [{name: Foo}]}}}]\n"),
        "profiles[0].plugins.score.enabled[0].name",
        'unknown plugin "Foo"',
    ),
    (
        "alpha plugin enabled",
        config("profiles: [{plugins: {permit: {enabled: [{name: GangScheduling}]}}}]\n"),
        "profiles[0].plugins.permit.enabled[0].name",
        "not supported by policy-scheduler",
    ),
    (
        "bad args",
        config(
            "profiles: [{pluginConfig: [{name: InterPodAffinity, args: {hardPodAffinityWeight: 101}}]}]\n"
        ),
        "profiles[0].pluginConfig[0].args.hardPodAffinityWeight",
        "must be less than or equal to 100",
    ),
    (
        "string weight",
        config("profiles: [{plugins: {score: {enabled: [{name: ImageLocality, weight: '2'}]}}}]\n"),
        "profiles[0].plugins.score.enabled[0].weight",
        "must be an integer",
    ),
    (
        "top-level backoff order",
        config("podInitialBackoffSeconds: 30\n"),
        "podMaxBackoffSeconds",
        "must be greater than or equal to podInitialBackoffSeconds",
    ),
    (
        "top-level percentage",
        config("percentageOfNodesToScore: 150\n"),
        "percentageOfNodesToScore",
        "must be less than or equal to 100",
    ),
    (
        "scheduler name not usable by pods",
        config("profiles: [{schedulerName: My_Scheduler}]\n"),
        "profiles[0].schedulerName",
        "must match",
    ),
]


@pytest.mark.parametrize(("text", "path", "message"), [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_errors_name_the_field(text: str, path: str, message: str) -> None:
    pairs = errors_of(text)
    assert any(p == path and message in m for p, m in pairs), pairs


def test_errors_are_value_errors_with_every_problem() -> None:
    text = config(
        "podInitialBackoffSeconds: 0\nprofiles: [{schedulerName: a}, {}, {schedulerName: b, x: 1}]\n"
    )
    with pytest.raises(ValueError, match="podInitialBackoffSeconds:") as info:
        import_config(text)
    message = str(info.value)
    for part in ("podInitialBackoffSeconds:", "profiles[1].schedulerName:", "profiles[2].x: unknown field"):
        assert part in message


def test_profile_values_win_over_top_level() -> None:
    text = config("percentageOfNodesToScore: 10\nprofiles: [{percentageOfNodesToScore: 0}]\n")
    (manifest,) = import_config(text)
    assert manifest["spec"]["percentageOfNodesToScore"] == 0


def test_manifest_specs_parse_back_unchanged() -> None:
    for manifest in import_config(FULL):
        spec: dict[str, Any] = manifest["spec"]
        assert parse_profile_spec(spec).model_dump(mode="json", exclude_unset=True) == spec


def test_coscheduling_profile_imports_with_upstream_arg_names() -> None:
    text = textwrap.dedent(
        """
        apiVersion: kubescheduler.config.k8s.io/v1
        kind: KubeSchedulerConfiguration
        profiles:
        - schedulerName: scheduler-plugins-scheduler
          plugins:
            multiPoint:
              enabled: [{name: Coscheduling}]
            queueSort:
              disabled: [{name: PrioritySort}]
          pluginConfig:
          - name: Coscheduling
            args:
              apiVersion: kubescheduler.config.k8s.io/v1
              kind: CoschedulingArgs
              permitWaitingTimeSeconds: 10
        """
    )
    [manifest] = import_config(text)
    configs = compile_profile_objects([manifest])
    assert configs[0].plugin_config["Coscheduling"] == {
        "permitWaitingTimeSeconds": 10,
        "podGroupBackoffSeconds": 0,
    }
    bad = text.replace("permitWaitingTimeSeconds: 10", "permitWaitingTimeSeconds: -1")
    with pytest.raises(
        PolicyError, match=r"profiles\[0\]\.pluginConfig\[0\]\.args\.permitWaitingTimeSeconds"
    ):
        import_config(bad)


WORKLOAD_POINTS_CONFIG = config(
    """\
    profiles:
    - schedulerName: workloads
      plugins:
        placementGenerate: {disabled: [{name: "*"}]}
        placementScore: {disabled: [{name: PodGroupPodsCount}]}
        score: {disabled: [{name: ImageLocality}]}
    """
)


@pytest.mark.parametrize(
    ("version", "errors"),
    [
        (
            V1_35,
            [
                ("profiles[0].plugins.placementGenerate", "since Kubernetes v1.36 (importing for v1.35)"),
                ("profiles[0].plugins.placementScore", "since Kubernetes v1.36 (importing for v1.35)"),
            ],
        ),
        (V1_36, []),
        (V1_37, []),
    ],
)
def test_workload_extension_points_are_fields_of_their_release(
    version: KubernetesVersion, errors: list[tuple[str, str]]
) -> None:
    """kubescheduler.config.k8s.io/v1 gained placementGenerate and placementScore in v1.36 and
    podGroupPostFilter in v1.37; disabling plugins there is accepted and changes nothing."""
    if errors:
        with pytest.raises(PolicyError) as info:
            import_config(WORKLOAD_POINTS_CONFIG, features=Features(version))
        pairs = info.value.pairs
        assert len(pairs) == len(errors), pairs
        for (path, message), (want_path, want_message) in zip(pairs, errors, strict=True):
            assert (path, want_message in message) == (want_path, True), pairs
        return
    (manifest,) = import_config(WORKLOAD_POINTS_CONFIG, features=Features(version))
    assert manifest["spec"]["plugins"] == {"score": {"disabled": [{"name": "ImageLocality"}]}}


def test_pod_group_post_filter_is_a_v1_37_field() -> None:
    text = config("profiles: [{plugins: {podGroupPostFilter: {disabled: [{name: '*'}]}}}]\n")
    with pytest.raises(PolicyError) as info:
        import_config(text, features=Features(V1_36))
    assert [p for p, _ in info.value.pairs] == ["profiles[0].plugins.podGroupPostFilter"]
    assert import_config(text, features=Features(V1_37))[0]["spec"].get("plugins") in (None, {})


def test_a_plugin_enabled_at_a_workload_extension_point_is_refused_by_name() -> None:
    text = config("profiles: [{plugins: {placementScore: {enabled: [{name: PodGroupPodsCount}]}}}]\n")
    with pytest.raises(PolicyError) as info:
        import_config(text, features=Features(V1_37))
    ((path, message),) = info.value.pairs
    assert path == "profiles[0].plugins.placementScore.enabled[0].name"
    assert 'plugin "PodGroupPodsCount" is not supported by policy-scheduler' in message
