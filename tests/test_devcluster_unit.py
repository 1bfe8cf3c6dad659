"""Unit tests for the dev cluster pieces that need no Kubernetes binaries."""

from __future__ import annotations

import argparse
import base64
import os
import time
from pathlib import Path

import pytest

from policy_scheduler.app.commands import Deferred
from policy_scheduler.devcluster import arguments, cli, hostnet
from policy_scheduler.devcluster.build import BuildError
from policy_scheduler.devcluster.cluster import DevCluster
from policy_scheduler.devcluster.credentials import kubeconfig_document
from policy_scheduler.devcluster.flags import (
    Ports,
    apiserver_args,
    controller_manager_args,
    kwok_args,
    with_overrides,
)
from policy_scheduler.devcluster.kwokstages import STAGE_FILES, install_stages
from policy_scheduler.devcluster.nodes import NodeShape, is_ready, next_names, node_ip, node_manifest
from policy_scheduler.devcluster.procs import Component, log_tail, pid_runs, spawn, terminate
from policy_scheduler.devcluster.status import ClusterStatus, ComponentStatus

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


def test_build_builds_helm_with_the_control_plane(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    built: list[str] = []

    def build_all(**_kwargs: object) -> Path:
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

    monkeypatch.setattr(cli, "build_all", lambda **_kwargs: tmp_path)
    monkeypatch.setattr(cli, "ensure_helm", ensure_helm)
    assert cli.main(["build"]) == 1
    assert capsys.readouterr().err == "error: building helm failed (exit 1)\n"


def test_extra_apiserver_flags_replace_the_defaults_of_the_same_name() -> None:
    args = apiserver_args(Path("/bin/kube-apiserver"), Path("/pki"), PORTS, None)
    merged = with_overrides(args, ["--authorization-mode=RBAC", "--runtime-config=resource.k8s.io/v1=false"])
    assert [a for a in merged if a.startswith("--authorization-mode")] == ["--authorization-mode=RBAC"]
    assert merged[-1] == "--runtime-config=resource.k8s.io/v1=false"
    assert len(merged) == len(args) + 1
