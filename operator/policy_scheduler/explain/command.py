"""`policy-scheduler explain NAMESPACE/NAME`: ask the operator, else recompute from the cluster."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import ssl
import sys
from typing import TYPE_CHECKING

from policy_scheduler.explain.client import Answer, OperatorUnreachable, ask_endpoint, ask_leader
from policy_scheduler.explain.format import format_explanation
from policy_scheduler.explain.recompute import NotExplainable, recompute
from policy_scheduler.kube.client import authorization
from policy_scheduler.pressure.live import live_standing, live_usage
from policy_scheduler.scheduler.diagnosis_recorder import RUNNING, Explanation
from policy_scheduler.scheduler.versioning.semantics import command_semantics
from policy_scheduler.simulate.live_snapshot import SnapshotError, api_get, read_snapshot

if TYPE_CHECKING:
    from policy_scheduler.kube.client import ApiClient


def parse_target(pod: str, namespace: str) -> tuple[str, str]:
    if "/" in pod:
        ns, _, name = pod.partition("/")
        return ns, name
    return namespace, pod


def explain_command(args: argparse.Namespace) -> int:
    return asyncio.run(_explain(args))


def endpoint_tls(args: argparse.Namespace) -> ssl.SSLContext | bool:
    if args.insecure_skip_tls_verify:
        return False
    if args.certificate_authority:
        return ssl.create_default_context(cafile=args.certificate_authority)
    return True


async def _ask(args: argparse.Namespace, api: ApiClient | None, namespace: str, name: str) -> Answer:
    if args.endpoint:
        header = await authorization(api) if api is not None else None
        return await ask_endpoint(
            args.endpoint, namespace, name, authorization_header=header, tls=endpoint_tls(args)
        )
    assert api is not None, "without --endpoint the client is always made"
    return await ask_leader(api, args.lease_namespace, args.lease_name, namespace, name)


async def _explain(args: argparse.Namespace) -> int:
    from policy_scheduler.kube.client import make_api_client
    from policy_scheduler.kube.kubeconfig import KubeconfigError

    namespace, name = parse_target(args.pod, args.namespace)
    api: ApiClient | None = None
    try:
        if not args.endpoint or args.endpoint.startswith("https:"):
            # The leader is found through the API server; an https endpoint wants our token.
            api = await make_api_client(args.kubeconfig)
        explanation: Explanation | None = None
        try:
            answer = await _ask(args, api, namespace, name)
            if answer.status == 200:
                explanation = Explanation.from_json(answer.body)
                note = f"answered by {answer.via}"
            else:
                note = f"{answer.via} has no record of the pod"
        except OperatorUnreachable as exc:
            note = f"operator unreachable: {exc}"
        if explanation is None:
            if not args.recompute:
                print(f"error: {namespace}/{name}: {note}", file=sys.stderr)
                return 1
            if api is None:
                api = await make_api_client(args.kubeconfig)
            get = api_get(api)
            scenario, _ = await read_snapshot(get, namespaces=[namespace])
            semantics = command_semantics(
                getattr(args, "kubernetes_version", None), scenario.server_version, from_cluster=True
            )
            note += f"; recomputed from a live snapshot of the cluster, {semantics.describe()}"
            pressure = await live_standing(get, scenario, namespace, name)
            try:
                usage = await live_usage(get, scenario)
                explanation = recompute(scenario, namespace, name, semantics, usage)
            except NotExplainable as exc:
                if pressure is None:
                    raise
                # Not ours to schedule, but on a node under pressure: that much can be told.
                node = str(pressure.get("node", ""))
                explanation = Explanation(
                    namespace, name, "", RUNNING, node=node, message=str(exc), source="recomputed"
                )
            if pressure is not None:
                explanation = dataclasses.replace(explanation, pressure=pressure)
    except (NotExplainable, SnapshotError, KubeconfigError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        if api is not None:
            await api.close()
    if args.output == "json":
        print(json.dumps({**explanation.to_json(), "note": note}, indent=2))
    else:
        sys.stdout.write(format_explanation(explanation, note))
    return 0
