"""The operator's configuration: built once from `policy-scheduler run`'s options, frozen,
passed down. The adapters' timings are kube.timings'; the mirror controller's are its own."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field, replace

from policy_scheduler.controllers.timings import MirrorTimings
from policy_scheduler.kube.pressure.arguments import pressure_options
from policy_scheduler.kube.pressure.options import PressureOptions
from policy_scheduler.kube.serving.arguments import serving_options
from policy_scheduler.kube.serving.options import ServingOptions
from policy_scheduler.kube.timings import AdapterTimings, EventTimings, InformerTimings, LeaderTimings
from policy_scheduler.scheduler.versioning.features import Features
from policy_scheduler.scheduler.versioning.flags import FlagError, parse_emulated_version, parse_feature_gates
from policy_scheduler.scheduler.versioning.version import SUPPORTED_VERSIONS, KubernetesVersion


@dataclass(frozen=True, slots=True)
class OperatorConfig:
    kubeconfig: str | None = None
    install_crds: bool = False
    serving: ServingOptions = field(default_factory=ServingOptions)
    leader_elect: bool = True
    lease_namespace: str = "policy-scheduler"
    lease_name: str = "policy-scheduler"
    identity: str | None = None  # default: hostname_uuid
    profile_selector: str = ""
    api_discovery_interval: float = 60.0
    timings: AdapterTimings = field(default_factory=AdapterTimings)
    mirrors: MirrorTimings = field(default_factory=MirrorTimings)
    pressure: PressureOptions = field(default_factory=PressureOptions)
    # --feature-gates, in order; --emulated-version (None: follow the API server's release).
    feature_gates: tuple[tuple[str, bool], ...] = ()
    emulated_version: KubernetesVersion | None = None

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> OperatorConfig:
        """From `policy-scheduler run`'s options (app.cli defines them); ValueError names the
        options that do not go together, or a --feature-gates or --emulated-version
        kube-scheduler would refuse."""
        gates, emulated = _kubernetes_options(args)
        return cls(
            feature_gates=gates,
            emulated_version=emulated,
            kubeconfig=args.kubeconfig,
            install_crds=args.install_crds,
            serving=serving_options(args),
            leader_elect=args.leader_elect,
            lease_namespace=args.lease_namespace,
            lease_name=args.lease_name,
            identity=args.identity,
            profile_selector=args.profile_selector,
            api_discovery_interval=args.api_discovery_interval,
            timings=AdapterTimings(
                events=_event_timings(args),
                leader=_leader_timings(args),
                informer=_informer_timings(args),
            ),
            pressure=pressure_options(args),
        )


def _kubernetes_options(
    args: argparse.Namespace,
) -> tuple[tuple[tuple[str, bool], ...], KubernetesVersion | None]:
    """The gates and emulated release, checked as far as is known before the API server answers:
    against the emulated release, else against every supported one (the API server's is one of
    them, or the nearest is used)."""
    try:
        gates = parse_feature_gates(getattr(args, "feature_gates", None) or ())
        raw = getattr(args, "emulated_version", None)
        emulated = parse_emulated_version(raw) if raw else None
    except FlagError as exc:
        raise ValueError(f"--feature-gates/--emulated-version: {exc}") from None
    for version in (emulated,) if emulated is not None else SUPPORTED_VERSIONS:
        try:
            Features(version, gates)
        except ValueError as exc:
            if emulated is not None or version == SUPPORTED_VERSIONS[-1]:
                raise ValueError(f"--feature-gates: {exc}") from None
            continue
        break
    return gates, emulated


def _leader_timings(args: argparse.Namespace) -> LeaderTimings:
    lease = float(args.leader_elect_lease_duration)
    if not lease.is_integer():
        raise ValueError(
            f"--leader-elect-lease-duration must be whole seconds (the Lease stores "
            f"leaseDurationSeconds), not {lease:g}s"
        )
    timings = LeaderTimings(
        lease_duration=int(lease),
        renew_deadline=float(args.leader_elect_renew_deadline),
        retry_period=float(args.leader_elect_retry_period),
    )
    problems = timings.problems()
    if problems and args.leader_elect:
        raise ValueError("; ".join(problems))
    return timings


def _informer_timings(args: argparse.Namespace) -> InformerTimings:
    informer = InformerTimings()
    if args.catch_up_list_below is not None:
        informer = replace(informer, catch_up_list_below=args.catch_up_list_below)
    return informer


def _event_timings(args: argparse.Namespace) -> EventTimings:
    events = EventTimings()
    if args.event_qps is not None:
        events = replace(events, qps=args.event_qps)
    if args.event_burst is not None:
        events = replace(events, burst=args.event_burst)
    return events
