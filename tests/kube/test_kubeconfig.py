"""A kubeconfig that cannot be used is one line naming the file and what to fix, for `run`,
`explain` and `simulate --from-cluster` alike."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from policy_scheduler.app import cli
from policy_scheduler.kube.kubeconfig import KubeconfigError, load_configuration

GOOD = """
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
"""


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "kubeconfig"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (
            "clusters: [\n",
            "not valid YAML at line 2, column 1: expected the node content, but found '<stream end>'",
        ),
        ("- just\n- a list\n", "not a kubeconfig (expected clusters, users, contexts and current-context)"),
        (GOOD.replace("current-context: x", ""), "has no current-context"),
        (
            GOOD.replace("current-context: x", "current-context: y"),
            "current-context y names no entry in its contexts list",
        ),
        (
            GOOD.replace("user: u}", "user: nobody}"),
            "context x names user nobody, which is not in its users list",
        ),
    ],
)
async def test_a_broken_kubeconfig_is_named_with_its_problem(tmp_path: Path, text: str, problem: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(KubeconfigError) as caught:
        await load_configuration(path)
    assert str(caught.value) == f"kubeconfig {path} (--kubeconfig): {problem}"


async def test_an_unreadable_kubeconfig_says_why(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    missing = tmp_path / "nowhere"
    monkeypatch.setenv("KUBECONFIG", str(missing))
    with pytest.raises(KubeconfigError) as caught:
        await load_configuration()
    assert (
        str(caught.value) == f"kubeconfig {missing} ($KUBECONFIG): cannot read it: No such file or directory"
    )


async def test_without_any_configuration_it_says_what_to_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(KubeconfigError) as caught:
        await load_configuration()
    assert str(caught.value).startswith("no cluster to talk to: pass --kubeconfig or set $KUBECONFIG")


async def test_a_good_kubeconfig_loads(tmp_path: Path) -> None:
    configuration = await load_configuration(write(tmp_path, GOOD))
    assert configuration.host == "https://127.0.0.1:6443"


@pytest.mark.parametrize("command", [["explain", "default/web"], ["simulate", "--from-cluster"]])
def test_commands_print_one_line_and_fail(
    tmp_path: Path, command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "clusters: [\n")
    assert cli.main([*command, "--kubeconfig", path]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert f"kubeconfig {path} (--kubeconfig): not valid YAML at line 2" in err


def test_run_prints_one_line_and_exits_1(tmp_path: Path) -> None:
    # In its own interpreter: `run` pauses the collector for its whole life.
    path = write(tmp_path, GOOD.replace("current-context: x", ""))
    done = subprocess.run(
        [sys.executable, "-m", "policy_scheduler", "run", "--secure-port", "0", "--kubeconfig", path],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stderr) == (
        1,
        f"error: kubeconfig {path} (--kubeconfig): has no current-context\n",
    )
