"""Child processes of the dev cluster: one process group each, logs in files, clean stops."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from policy_scheduler.devcluster.errors import DevClusterError

_PR_SET_PDEATHSIG = 1


@dataclass
class Component:
    """One running binary. `popen` is None when the process was started by another program
    (for example `dev-cluster up`) and is only known by its PID from the state file."""

    name: str
    argv: list[str]
    log_path: Path
    pid: int
    popen: subprocess.Popen[bytes] | None = field(default=None, repr=False, compare=False)
    # The environment it was started with (None: inherited), for a restart by the same program.
    env: Mapping[str, str] | None = field(default=None, repr=False, compare=False)

    def alive(self) -> bool:
        if self.popen is not None:
            return self.popen.poll() is None
        return pid_runs(self.pid, self.argv[0])

    def exit_code(self) -> int | None:
        return self.popen.poll() if self.popen is not None else None

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "pid": self.pid, "argv": self.argv, "log": str(self.log_path)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Component:
        return cls(str(data["name"]), [str(a) for a in data["argv"]], Path(data["log"]), int(data["pid"]))


def pid_runs(pid: int, executable: str) -> bool:
    """True if `pid` is a live (non-zombie) process running `executable`.

    Checking the command line guards against killing an unrelated process that reused the
    PID of a component which died long ago.
    """
    proc = Path("/proc") / str(pid)
    try:
        state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        argv0 = (proc / "cmdline").read_bytes().split(b"\0", 1)[0].decode()
    except (OSError, IndexError):
        return False
    return state != "Z" and argv0 == executable


def _die_with_parent_hook() -> Callable[[], None]:
    """A preexec hook asking the kernel to SIGTERM the child when this process dies.

    This is what keeps a SIGKILLed test run from leaving an apiserver behind. The kernel
    ties it to the creating *thread*, so it is only used from the main thread.
    """
    libc = ctypes.CDLL(None, use_errno=True)
    parent = os.getpid()

    def hook() -> None:
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:  # the parent died before prctl took effect
            os._exit(1)

    return hook


def spawn(
    name: str,
    argv: list[str],
    log_path: Path,
    *,
    env: Mapping[str, str] | None = None,
    die_with_parent: bool = True,
) -> Component:
    """Start `argv` in its own session (so terminal signals do not hit it and it can be
    killed as a group) with stdout and stderr appended to `log_path`."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    in_main_thread = threading.current_thread() is threading.main_thread()
    hook = _die_with_parent_hook() if die_with_parent and in_main_thread else None
    with log_path.open("ab") as log:
        popen = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=dict(env) if env is not None else None,
            start_new_session=True,
            preexec_fn=hook,  # only calls prctl, so safe after fork
        )
    return Component(name, argv, log_path, popen.pid, popen, env)


def _signal_group(component: Component, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(component.pid, sig)


def _wait_gone(component: Component, timeout: float) -> bool:
    if component.popen is not None:
        try:
            component.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            return False
        return True
    deadline = time.monotonic() + timeout
    while component.alive():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def terminate(component: Component, timeout: float = 10.0) -> None:
    """SIGTERM the component's process group, then SIGKILL it if it has not exited in time."""
    if not component.alive():
        _wait_gone(component, 0)  # reap a zombie child
        return
    _signal_group(component, signal.SIGTERM)
    if not _wait_gone(component, timeout):
        _signal_group(component, signal.SIGKILL)
        _wait_gone(component, 5.0)


def log_tail(path: Path, lines: int = 25) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return f"(no log at {path})"
    return "\n".join(text.splitlines()[-lines:])


def wait_until(component: Component | None, check: Callable[[], bool], what: str, timeout: float) -> None:
    """Poll `check` until it holds; fail early, with the log tail, if `component` dies."""
    deadline = time.monotonic() + timeout
    delay = 0.05
    while not check():
        if component is not None and not component.alive():
            raise DevClusterError(
                f"{component.name} exited (code {component.exit_code()}) before it was {what}"
                + _log_excerpt(component)
            )
        if time.monotonic() > deadline:
            name = component.name if component is not None else "dev cluster"
            excerpt = _log_excerpt(component) if component is not None else ""
            raise DevClusterError(f"{name} not {what} after {timeout:.0f}s{excerpt}")
        time.sleep(delay)
        delay = min(delay * 2, 0.5)


def _log_excerpt(component: Component) -> str:
    return f"; last lines of {component.log_path}:\n{log_tail(component.log_path)}"
