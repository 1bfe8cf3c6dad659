"""Issue 11, bad input on the real API server: a deterministic sample of the unit fuzzer's
hostile specs (tests/fuzz_specs.py), 20 SchedulingProfiles and 20 EvictionPolicies.

Each is refused by the API server naming the field, or stored and then accepted by the operator
or marked Accepted=False naming the field. `policy-scheduler validate` (check_object) predicts
the API server's verdict on every one. The operator stays alive, and a profile accepted before
the storm still schedules a pod after it.
"""

from __future__ import annotations

import importlib.util
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import Phase, given, seed, settings
from hypothesis import strategies as st

from fixtures_operator import OperatorProcess
from kubectl import Kubectl, condition, namespace, pod, profile
from policy_scheduler.validate.objects import STRICT, check_object
from policy_scheduler.validate.report import OPERATOR
from polling import wait_until

ROOT = Path(__file__).resolve().parents[1]
API_VERSION = "scheduling.policy-scheduler.io/v1alpha1"
NS = "e2e-fuzz"
GOOD, GOOD_SCHEDULER = "fuzz-good", "fuzz-good-scheduler"
SAMPLE = 20  # of each kind
POOL = 2000  # generated, to pick the sample from
SAMPLE_FILE = Path(__file__).parent / "fuzz_sample.json"
FIELD = re.compile(r"\bspec\b")


def _fuzz_specs() -> Any:
    spec = importlib.util.spec_from_file_location("fuzz_specs", ROOT / "tests" / "fuzz_specs.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def sample(strategy: st.SearchStrategy[Any], count: int) -> list[Any]:
    """`count` examples of `strategy`, derandomized (the same in the same process state)."""
    found: list[Any] = []

    @seed(20261124)
    @settings(max_examples=count, database=None, derandomize=True, phases=[Phase.generate], deadline=None)
    @given(strategy)
    def collect(value: Any) -> None:
        if len(found) < count:
            found.append(value)

    collect()
    return found


def _outcome(obj: dict[str, Any]) -> str:
    checked = check_object(obj["kind"], obj, STRICT)
    if not checked.stored:
        return "refused"
    return "rejected" if any(e[2] == OPERATOR for e in checked.errors) else "accepted"


def generate() -> list[dict[str, Any]]:
    """SAMPLE objects of each kind out of POOL generated ones, taken in order so that each
    predicted outcome (refused by the server, rejected by the operator, accepted) gets its share.
    Hypothesis draws constants from the modules loaded, so the sample is made once, by
    `python e2e/test_fuzz_policies.py`, and kept in SAMPLE_FILE."""
    fuzz = _fuzz_specs()
    made = []
    for kind, prefix, strategy in (
        ("SchedulingProfile", "fuzz-p", fuzz.profile_spec()),
        ("EvictionPolicy", "fuzz-e", fuzz.eviction_spec()),
    ):
        quota = dict.fromkeys(("refused", "rejected", "accepted"), SAMPLE // 3 + 1)
        picked: list[Any] = []
        for spec in sample(strategy, POOL):
            outcome = _outcome(
                {"apiVersion": API_VERSION, "kind": kind, "metadata": {"name": "x"}, "spec": spec}
            )
            if quota[outcome] > 0 and len(picked) < SAMPLE:
                quota[outcome] -= 1
                picked.append(spec)
        for i, spec in enumerate(picked):
            made.append(
                {"apiVersion": API_VERSION, "kind": kind, "metadata": {"name": f"{prefix}-{i}"}, "spec": spec}
            )
    return made


def objects() -> list[dict[str, Any]]:
    loaded: list[dict[str, Any]] = json.loads(SAMPLE_FILE.read_text())
    return loaded


def livez(operator: OperatorProcess) -> int:
    return operator.get("/livez", token=None)[0]


def verdict(kubectl: Kubectl, obj: dict[str, Any]) -> dict[str, Any] | None:
    """The operator's Accepted condition for the stored object's first generation."""
    stored = kubectl.get(obj["kind"].lower(), obj["metadata"]["name"])
    status = stored.get("status") or {}
    accepted = condition(stored, "Accepted")
    if status.get("observedGeneration") != stored["metadata"]["generation"] or accepted is None:
        return None
    return accepted


def _verdict_of(kubectl: Kubectl, obj: dict[str, Any]) -> Callable[[], dict[str, Any] | None]:
    return lambda: verdict(kubectl, obj)


def test_hostile_specs_on_the_api_server(operator_process: OperatorProcess, kubectl: Kubectl) -> None:
    kubectl.apply(namespace(NS), profile(GOOD, GOOD_SCHEDULER, percentageOfNodesToScore=30))
    wait_until(
        "the good profile accepted",
        lambda: (condition(kubectl.get("schedulingprofile", GOOD), "Ready") or {}).get("status") == "True",
        timeout=30,
    )
    sample_objects = objects()
    assert len(sample_objects) >= SAMPLE
    stored: list[tuple[dict[str, Any], Any]] = []
    refused = rejected = 0
    try:
        for obj in sample_objects:
            predicted = check_object(obj["kind"], obj, STRICT)
            result = kubectl.run("create", "-f", "-", stdin=json.dumps(obj), check=False)
            where = f"{obj['kind']} {obj['metadata']['name']} {json.dumps(obj['spec'])[:300]}"
            if result.returncode != 0:
                refused += 1
                assert FIELD.search(result.stderr), f"{where}: no field named in {result.stderr!r}"
                assert not predicted.stored, (
                    f"{where}: validate would store what the server refused: {result.stderr}"
                )
            else:
                assert predicted.stored, (
                    f"{where}: the server stored what validate refuses: {predicted.errors}"
                )
                stored.append((obj, predicted))

        for obj, predicted in stored:
            name = obj["metadata"]["name"]
            accepted = wait_until(f"operator verdict on {name}", _verdict_of(kubectl, obj), timeout=30)
            operator_errors = [e for e in predicted.errors if e[2] == OPERATOR]
            if accepted["status"] == "False" and accepted["reason"] == "InvalidSpec":
                rejected += 1
                assert FIELD.search(accepted["message"]), f"{name}: {accepted['message']}"
                assert operator_errors, f"{name}: validate accepts what the operator rejected: {accepted}"
            else:
                assert not operator_errors, (
                    f"{name}: validate rejects what the operator accepted: {operator_errors}"
                )
        assert operator_process.proc.poll() is None
        assert livez(operator_process) == 200
    finally:
        for obj in sample_objects:
            kubectl.delete(obj["kind"].lower(), obj["metadata"]["name"])

    print(
        f"FUZZ-E2E: {len(sample_objects)} specs, {refused} refused by the API server, {len(stored)} stored, "
        f"{rejected} of them rejected by the operator"
    )
    kubectl.create(pod("after-fuzz", NS, GOOD_SCHEDULER))
    assert wait_until(
        "a pod of the good profile schedules after the storm",
        lambda: kubectl.get("pod", "after-fuzz", NS)["spec"].get("nodeName"),
        timeout=30,
    )
    kubectl.delete("namespace", NS)
    kubectl.delete("schedulingprofile", GOOD)


if __name__ == "__main__":
    SAMPLE_FILE.write_text(json.dumps(generate(), ensure_ascii=False) + "\n")
