"""Unit tests for the dev cluster pieces that need no Kubernetes binaries."""

from __future__ import annotations

import argparse
import base64
import json
import os
import time
from pathlib import Path

import pytest

from policy_scheduler.app.commands import Deferred
from policy_scheduler.devcluster import arguments, build, cli, hostnet
from policy_scheduler.devcluster.build import BuildError
from policy_scheduler.devcluster.cluster import DevCluster
from policy_scheduler.devcluster.credentials import kubeconfig_document
from policy_scheduler.devcluster.flags import (
    Ports,
    apiserver_args,
    controller_manager_args,
    kwok_args,
    with_overrides,
    workload_api_flags,
)
from policy_scheduler.devcluster.kwokstages import STAGE_FILES, install_stages
from policy_scheduler.devcluster.nodes import NodeShape, is_ready, next_names, node_ip, node_manifest
from policy_scheduler.devcluster.procs import Component, log_tail, pid_runs, spawn, terminate
from policy_scheduler.devcluster.status import ClusterStatus, ComponentStatus
from policy_scheduler.devcluster.versions import (
    DEFAULT_KUBERNETES_VERSION,
    KUBERNETES_VERSION_ENV,
    SUPPORTED,
    ControlPlaneVersions,
    UnsupportedVersionError,
    bin_dir,
    control_plane,
)
from policy_scheduler.parity import cli as parity_cli

PORTS = Ports(etcd_client=1, etcd_peer=2, apiserver=3, controller_manager=4, kwok=5)


def test_free_ports_are_distinct() -> None:
    ports = hostnet.free_ports(5)
    assert len(set(ports)) == 5


def test_default_route_detection(tmp_path: Path) -> None:
    header = "Iface\tDestination\tGateway\tFlags\n"
    with_default = tmp_path / "route1"
    with_default.write_text(header + "eth0\t00000000\t0100A8C0\t0003\n")
    without = tmp_path / "route2"
    without.write_text(header + "eth0\t0000A8C0\t00000000\t0001\n")
    assert hostnet.has_ipv4_default_route(with_default)
    assert not hostnet.has_ipv4_default_route(without)
    assert not hostnet.has_ipv4_default_route(tmp_path / "missing")


def test_parse_ip_addr_skips_loopback() -> None:
    text = (
        "1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever\n"
        "4: eth0    inet 192.0.2.2/24 brd 192.0.2.255 scope global eth0\\       valid_lft forever\n"
    )
    assert hostnet.parse_ip_addr_output(text) == ["192.0.2.2"]


def test_advertise_address_choices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(hostnet.ADVERTISE_ENV, raising=False)
    monkeypatch.setattr(hostnet, "has_ipv4_default_route", lambda: True)
    assert hostnet.advertise_address() is None
    monkeypatch.setattr(hostnet, "has_ipv4_default_route", lambda: False)
    monkeypatch.setattr(hostnet, "_non_loopback_ipv4", lambda: ["10.1.2.3"])
    assert hostnet.advertise_address() == "10.1.2.3"
    monkeypatch.setattr(hostnet, "_non_loopback_ipv4", list)
    with pytest.raises(hostnet.HostNetworkError, match="no default route"):
        hostnet.advertise_address()
    monkeypatch.setenv(hostnet.ADVERTISE_ENV, "10.9.9.9")
    assert hostnet.advertise_address() == "10.9.9.9"


def test_apiserver_flags() -> None:
    args = apiserver_args(Path("/b/kube-apiserver"), Path("/w/pki"), PORTS, None)
    assert "--bind-address=127.0.0.1" in args
    assert "--secure-port=3" in args
    assert "--etcd-servers=http://127.0.0.1:1" in args
    assert "--disable-admission-plugins=ServiceAccount,TaintNodesByCondition" in args
    assert not any(a.startswith("--advertise-address") for a in args)
    assert "--advertise-address=10.0.0.7" in apiserver_args(Path("x"), Path("p"), PORTS, "10.0.0.7")


def test_node_lifecycle_option_enables_condition_taints() -> None:
    args = apiserver_args(Path("a"), Path("p"), PORTS, None, node_lifecycle=True)
    assert "--disable-admission-plugins=ServiceAccount" in args
    kcm = controller_manager_args(Path("k"), Path("c"), PORTS, node_lifecycle=True)
    controllers = next(a for a in kcm if a.startswith("--controllers=")).split("=", 1)[1].split(",")
    assert "node-lifecycle-controller" in controllers
    plain = controller_manager_args(Path("k"), Path("c"), PORTS)
    assert "node-lifecycle-controller" not in next(a for a in plain if a.startswith("--controllers="))


def test_controller_manager_and_kwok_flags() -> None:
    kcm = controller_manager_args(Path("/b/kcm"), Path("/w/kubeconfig"), PORTS)
    assert "--leader-elect=false" in kcm
    assert "--secure-port=4" in kcm
    controllers = next(a for a in kcm if a.startswith("--controllers=")).split("=", 1)[1].split(",")
    assert "disruption-controller" in controllers
    kwok = kwok_args(Path("/b/kwok"), Path("/w/kubeconfig"), PORTS, [Path("/s/a.yaml"), Path("/s/b.yaml")])
    assert "--manage-all-nodes=true" in kwok
    assert "--server-address=127.0.0.1:5" in kwok
    assert kwok[-2:] == ["--config=/s/a.yaml", "--config=/s/b.yaml"]


def test_kubeconfig_document_embeds_ca_and_token() -> None:
    doc = kubeconfig_document("https://127.0.0.1:3", "secret", b"PEM")
    cluster = doc["clusters"][0]["cluster"]
    assert cluster["server"] == "https://127.0.0.1:3"
    assert base64.b64decode(cluster["certificate-authority-data"]) == b"PEM"
    assert doc["users"][0]["user"] == {"token": "secret"}


def test_node_manifest_has_capacity_labels_and_no_taints() -> None:
    node = node_manifest(
        "kwok-node-4", "zone-b", NodeShape(cpu="8", labels={"pool": "a"}), internal_ip="172.16.0.5"
    )
    assert node["status"]["capacity"]["cpu"] == "8"
    assert node["status"]["allocatable"] == node["status"]["capacity"]
    labels = node["metadata"]["labels"]
    assert labels["topology.kubernetes.io/zone"] == "zone-b"
    assert labels["kubernetes.io/hostname"] == "kwok-node-4"
    assert labels["pool"] == "a"
    assert node["metadata"]["annotations"] == {"kwok.x-k8s.io/node": "fake"}
    assert "taints" not in node["spec"]
    assert node["status"]["addresses"][0] == {"type": "InternalIP", "address": "172.16.0.5"}


def test_node_manifest_carries_the_shapes_taints() -> None:
    taint = {"key": "dedicated", "value": "x", "effect": "NoSchedule"}
    node = node_manifest("n-0", "zone-a", NodeShape(taints=(taint,)))
    assert node["spec"]["taints"] == [taint]


def test_next_names_continue_after_existing() -> None:
    assert next_names("kwok-node", 2, []) == ["kwok-node-0", "kwok-node-1"]
    existing = ["kwok-node-0", "kwok-node-7", "big-3", "kwok-node-x"]
    assert next_names("kwok-node", 2, existing) == ["kwok-node-8", "kwok-node-9"]
    assert next_names("big", 1, existing) == ["big-4"]


def test_node_ips_are_distinct() -> None:
    assert len({node_ip(i) for i in range(1000)}) == 1000


def test_is_ready() -> None:
    assert is_ready({"status": {"conditions": [{"type": "Ready", "status": "True"}]}})
    assert not is_ready({"status": {"conditions": [{"type": "Ready", "status": "False"}]}})
    assert not is_ready({})


def test_install_stages_copies_the_kwok_files(tmp_path: Path) -> None:
    try:
        paths = install_stages(tmp_path / "stages")
    except RuntimeError as exc:  # no Go module cache and no Go on this machine
        pytest.skip(str(exc))
    assert [p.name for p in paths] == [Path(s).name for s in STAGE_FILES]
    assert all("kind: Stage" in p.read_text() for p in paths)


def test_spawn_and_terminate_process_group(tmp_path: Path) -> None:
    # A shell that ignores SIGTERM and has a child: SIGKILL to the group must take both.
    script = "trap '' TERM; sleep 60 & echo started; wait"
    component = spawn("stubborn", ["/bin/sh", "-c", script], tmp_path / "logs" / "s.log")
    deadline = time.monotonic() + 5
    while "started" not in log_tail(component.log_path) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert component.alive()
    started = time.monotonic()
    terminate(component, timeout=0.5)
    assert not component.alive()
    assert time.monotonic() - started < 5
    assert _group_gone(component.pid, within=2.0), "the backgrounded `sleep` survived"


def _group_gone(pgid: int, within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.02)  # a killed grandchild lingers until init reaps it
    return False


def test_component_state_round_trip_and_pid_check(tmp_path: Path) -> None:
    argv0 = Path("/proc/self/cmdline").read_bytes().split(b"\0")[0].decode()
    me = Component("me", [argv0], tmp_path / "me.log", os.getpid())
    again = Component.from_json(me.to_json())
    assert again == me
    assert pid_runs(os.getpid(), argv0)
    assert not pid_runs(os.getpid(), "/not/this/binary")  # a reused PID is not ours


def test_cluster_status_running_and_describe(tmp_path: Path) -> None:
    comp = ComponentStatus("etcd", 1, True, tmp_path / "etcd.log")
    up = ClusterStatus(tmp_path, "https://127.0.0.1:1", tmp_path / "kubeconfig", (comp,), True)
    assert up.running
    assert "running" in up.describe()
    dead = ClusterStatus(tmp_path, None, tmp_path / "kubeconfig", (), False)
    assert not dead.running
    assert "not running" in dead.describe()


def test_from_state_without_state_and_stop_without_start(tmp_path: Path) -> None:
    assert DevCluster.from_state(tmp_path) is None
    (tmp_path / "etcd").mkdir()
    DevCluster(tmp_path).stop()  # must not touch a workdir it never started in
    assert (tmp_path / "etcd").is_dir()


def test_cli_parser_dispatch(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser()
    arguments.add_parser(parser.add_subparsers())
    args = parser.parse_args(["dev-cluster", "status", "--workdir", str(tmp_path)])
    assert args.func(args) == 1
    assert "not running" in capsys.readouterr().out
    args = parser.parse_args(["dev-cluster", "down", "--workdir", str(tmp_path)])
    assert args.func(args) == 0
    args = parser.parse_args(["dev-cluster", "up", "--nodes", "3"])
    assert args.nodes == 3
    assert args.workdir == arguments.default_workdir()
    assert args.func == Deferred("policy_scheduler.devcluster.cli", "cmd_up")


def test_module_entry_point_help() -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(["--help"])
    assert exc.value.code == 0


# ---- control plane versions ------------------------------------------------------------------


def test_version_selection_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KUBERNETES_VERSION_ENV, raising=False)
    assert control_plane().kubernetes == DEFAULT_KUBERNETES_VERSION
    monkeypatch.setenv(KUBERNETES_VERSION_ENV, "v1.36.3")
    assert control_plane().kubernetes == "v1.36.3"
    assert control_plane("v1.37.2").kubernetes == "v1.37.2"  # the flag wins over the environment
    assert control_plane("1.35.4").kubernetes == "v1.35.4"
    monkeypatch.setenv(KUBERNETES_VERSION_ENV, "")
    assert control_plane().kubernetes == DEFAULT_KUBERNETES_VERSION


def test_supported_versions_pair_etcd_and_kwok() -> None:
    by_version = {v.kubernetes: v for v in SUPPORTED}
    assert set(by_version) == {"v1.35.4", "v1.36.3", "v1.37.2"}
    assert DEFAULT_KUBERNETES_VERSION in by_version
    assert by_version["v1.37.2"].etcd.startswith("v3.7.")
    assert by_version["v1.36.3"].etcd.startswith("v3.6.")
    assert by_version["v1.35.4"].etcd.startswith("v3.6.")
    assert by_version["v1.37.2"].staging == "v0.37.2"
    assert by_version["v1.36.3"].minor == 36


@pytest.mark.parametrize("requested", ["v1.34.0", "v1.37", "latest"])
def test_unsupported_version_is_one_line_listing_the_supported(
    requested: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(UnsupportedVersionError) as exc:
        control_plane(requested)
    message = str(exc.value)
    assert "\n" not in message
    assert requested in message
    assert all(v in message for v in ("v1.35.4", "v1.36.3", "v1.37.2"))
    monkeypatch.setenv(KUBERNETES_VERSION_ENV, requested)
    with pytest.raises(UnsupportedVersionError, match=KUBERNETES_VERSION_ENV):
        control_plane()


def test_each_version_has_its_own_binaries(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("POLICY_SCHEDULER_CACHE", str(tmp_path))
    dirs = {bin_dir(v) for v in SUPPORTED}
    assert len(dirs) == len(SUPPORTED)
    assert all(d.parent == tmp_path / "bin" for d in dirs)
    assert bin_dir(control_plane("v1.37.2")).name == "k8s-v1.37.2_etcd-v3.7.3_kwok-v0.8.0"
    monkeypatch.setenv(KUBERNETES_VERSION_ENV, "v1.36.3")
    assert bin_dir() == bin_dir(control_plane("v1.36.3"))


def _go_mod_lines(versions: ControlPlaneVersions, component: str) -> list[str]:
    directory = versions.gomod(component)
    assert (directory / "go.sum").is_file(), directory
    return [line.strip() for line in (directory / "go.mod").read_text().splitlines()]


@pytest.mark.parametrize("versions", SUPPORTED, ids=lambda v: v.kubernetes)
def test_wrapper_modules_pin_each_versions_sources(versions: ControlPlaneVersions) -> None:
    kubernetes = _go_mod_lines(versions, "kubernetes")
    assert any(line.startswith(f"k8s.io/kubernetes {versions.kubernetes}") for line in kubernetes)
    replaced = [line for line in kubernetes if "=>" in line]
    assert replaced
    assert all(line.endswith(f" {versions.staging}") for line in replaced)
    assert "k8s.io/kubernetes/cmd/kube-scheduler" in kubernetes
    assert any(
        line.startswith(f"go.etcd.io/etcd/server/v3 {versions.etcd}")
        for line in _go_mod_lines(versions, "etcd")
    )
    assert any(
        line.startswith(f"sigs.k8s.io/kwok {versions.kwok}") for line in _go_mod_lines(versions, "kwok")
    )


def test_build_targets_follow_the_version() -> None:
    versions = control_plane("v1.37.2")
    by_binary = {t.binary: t for t in build.targets(versions)}
    assert set(by_binary) == set(build.BINARIES)
    scheduler = by_binary["kube-scheduler"]
    assert scheduler.module_dir == versions.gomod("kubernetes")
    assert "gitVersion=v1.37.2" in scheduler.ldflags
    assert "gitMinor=37" in scheduler.ldflags
    assert by_binary["etcd"].module_dir == versions.gomod("etcd")
    assert f"Version={versions.kwok}" in by_binary["kwok"].ldflags


def test_missing_binaries_of_a_version(tmp_path: Path) -> None:
    assert build.missing_binaries(tmp_path) == list(build.BINARIES)
    for name in build.BINARIES[:-1]:
        (tmp_path / name).write_text("")
    assert build.missing_binaries(tmp_path) == [build.BINARIES[-1]]


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    arguments.add_parser(parser.add_subparsers())
    return parser.parse_args(argv)


@pytest.mark.parametrize("action", ["build", "up"])
def test_cli_rejects_an_unsupported_version_in_one_line(
    action: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    extra = ["--workdir", str(tmp_path)] if action == "up" else []
    args = _parse(["dev-cluster", action, "--kubernetes-version", "v1.30.0", *extra])
    assert args.func(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "v1.30.0 is not supported" in err
    assert "v1.37.2, v1.36.3, v1.35.4" in err
    assert not (tmp_path / "state.json").exists()


def test_cli_build_builds_the_requested_version(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    built: list[ControlPlaneVersions] = []

    def fake_build(versions: ControlPlaneVersions, **_kwargs: object) -> Path:
        built.append(versions)
        return tmp_path

    monkeypatch.setattr(cli, "build_all", fake_build)
    monkeypatch.setenv(KUBERNETES_VERSION_ENV, "v1.35.4")
    args = _parse(["dev-cluster", "build", "--kubernetes-version", "v1.36.3"])
    assert args.func(args) == 0
    args = _parse(["dev-cluster", "build"])
    assert args.func(args) == 0
    assert [v.kubernetes for v in built] == ["v1.36.3", "v1.35.4"]
    assert "kubernetes v1.36.3" in capsys.readouterr().out


def test_state_records_the_versions(tmp_path: Path) -> None:
    versions = control_plane("v1.36.3")
    cluster = DevCluster(tmp_path, versions=versions)
    assert cluster.binaries == bin_dir(versions)
    cluster._write_state()
    again = DevCluster.from_state(tmp_path)
    assert again is not None
    assert again.versions == versions
    # a state file from before versions were recorded: v1.35.4 was the only version then
    state = json.loads(cluster.state_file.read_text())
    del state["versions"]
    cluster.state_file.write_text(json.dumps(state))
    old = DevCluster.from_state(tmp_path)
    assert old is not None
    assert old.versions.kubernetes == "v1.35.4"


def test_status_names_the_versions(tmp_path: Path) -> None:
    comp = ComponentStatus("etcd", 1, True, tmp_path / "etcd.log")
    status = ClusterStatus(
        tmp_path, "https://127.0.0.1:1", tmp_path / "kubeconfig", (comp,), True, "kubernetes v1.37.2"
    )
    assert "versions:   kubernetes v1.37.2" in status.describe()


def test_parity_rejects_an_unsupported_or_unbuilt_version(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert parity_cli.main(["run", "--kubernetes-version", "v1.99.0"]) == 2
    assert "v1.99.0 is not supported" in capsys.readouterr().err
    monkeypatch.setenv("POLICY_SCHEDULER_CACHE", str(tmp_path))  # nothing built here
    assert parity_cli.main(["run", "--kubernetes-version", "v1.36.3", "--count", "1"]) == 2
    err = capsys.readouterr().err
    assert "v1.36.3 control plane is not built" in err
    assert "dev-cluster build --kubernetes-version v1.36.3" in err


def test_build_builds_helm_with_the_control_plane(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    built: list[str] = []

    def build_all(*_args: object, **_kwargs: object) -> Path:
        built.append("control plane")
        return tmp_path / "k8s"

    def ensure_helm(**_kwargs: object) -> Path:
        built.append("helm")
        return tmp_path / "helm" / "helm"

    monkeypatch.setattr(cli, "build_all", build_all)
    monkeypatch.setattr(cli, "ensure_helm", ensure_helm)
    assert cli.main(["build"]) == 0
    assert built == ["control plane", "helm"]
    assert f"ready in {tmp_path / 'helm'}" in capsys.readouterr().out


def test_build_reports_a_helm_build_failure_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def ensure_helm(**_kwargs: object) -> Path:
        raise BuildError("building helm failed (exit 1)")

    monkeypatch.setattr(cli, "build_all", lambda *_args, **_kwargs: tmp_path)
    monkeypatch.setattr(cli, "ensure_helm", ensure_helm)
    assert cli.main(["build"]) == 1
    assert capsys.readouterr().err == "error: building helm failed (exit 1)\n"


def test_extra_apiserver_flags_replace_the_defaults_of_the_same_name() -> None:
    args = apiserver_args(Path("/bin/kube-apiserver"), Path("/pki"), PORTS, None)
    merged = with_overrides(args, ["--authorization-mode=RBAC", "--runtime-config=resource.k8s.io/v1=false"])
    assert [a for a in merged if a.startswith("--authorization-mode")] == ["--authorization-mode=RBAC"]
    assert merged[-1] == "--runtime-config=resource.k8s.io/v1=false"
    assert len(merged) == len(args) + 1


@pytest.mark.parametrize(
    ("kubernetes", "flags"),
    [
        (
            "v1.37.2",
            ["--feature-gates=GenericWorkload=true", "--runtime-config=scheduling.k8s.io/v1beta1=true"],
        ),
        (
            "v1.36.3",
            [
                "--feature-gates=GenericWorkload=true,GangScheduling=true",
                "--runtime-config=scheduling.k8s.io/v1alpha2=true",
            ],
        ),
        (
            "v1.35.4",
            [
                "--feature-gates=GenericWorkload=true,GangScheduling=true",
                "--runtime-config=scheduling.k8s.io/v1alpha1=true",
            ],
        ),
    ],
)
def test_workload_api_flags_per_release(kubernetes: str, flags: list[str]) -> None:
    assert workload_api_flags(kubernetes) == flags
    with pytest.raises(ValueError, match="no Workload API"):
        workload_api_flags("v1.34.0")
