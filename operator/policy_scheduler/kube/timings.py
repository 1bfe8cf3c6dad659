"""Every timing of the API adapters, with the upstream value it follows where there is one, so
tuning and review happen in one place. `policy-scheduler run` builds them once (service.config);
components built without one (tests, tools) take DEFAULTS.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from policy_scheduler.kube.retry import RetryPolicy


@dataclass(frozen=True, slots=True)
class ApiTimings:
    request_timeout: float = 30.0  # total per request (watches: connect only)
    # Connections for requests (binds, events, status writes, lists); watches have their own.
    request_connections: int = 64
    crd_served_wait: float = 60.0  # --install-crds: how long our CRDs may take to be served
    crd_served_poll: float = 0.2
    # pods/status patches (conditions, nominations, DisruptionTarget): delays in [0.1, 0.2) s,
    # doubling. Never near zero: a pod's write and its retries stay a few per second in a storm.
    status_patch_retry: RetryPolicy = field(
        default_factory=lambda: RetryPolicy(
            initial=0.2, cap=5.0, max_attempts=5, max_retry_after=30.0, min_share=0.5
        )
    )
    # volumebinding's BindPodVolumes polls the bindings every second; a change wakes it sooner.
    volume_binding_recheck: float = 1.0


@dataclass(frozen=True, slots=True)
class LeaderTimings:
    # kube-scheduler's --leader-elect-lease-duration / -renew-deadline / -retry-period defaults.
    # The lease duration is whole seconds: the Lease's leaseDurationSeconds is an integer field.
    lease_duration: int = 15
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    # How often the event loop's liveness is noted (a gap longer than the margin is a pause).
    loop_tick: float = 0.2
    # The same lease error is logged again at most this often while it lasts.
    error_log_interval: float = 30.0

    @property
    def margin(self) -> float:
        """How much earlier than a standby could take the lease this replica stops acting: the
        leader acts until renewDeadline after its last successful renew was sent, a standby may
        take over no sooner than leaseDuration after it saw that renew."""
        return self.lease_duration - self.renew_deadline

    def problems(self) -> list[str]:
        """What is wrong with these timings, in the flags' terms (client-go's own checks)."""
        found = []
        if self.lease_duration < 1:
            found.append("--leader-elect-lease-duration must be at least 1s")
        if self.renew_deadline >= self.lease_duration:
            found.append("--leader-elect-lease-duration must be greater than --leader-elect-renew-deadline")
        if self.retry_period <= 0:
            found.append("--leader-elect-retry-period must be greater than zero")
        if self.renew_deadline <= LEADER_JITTER_FACTOR * self.retry_period:
            found.append(
                f"--leader-elect-renew-deadline must be greater than {LEADER_JITTER_FACTOR} x "
                "--leader-elect-retry-period"
            )
        return found


# client-go's leaderelection.JitterFactor: a standby waits retryPeriod x [1, 1 + this) between tries.
LEADER_JITTER_FACTOR = 1.2


@dataclass(frozen=True, slots=True)
class InformerTimings:
    list_timeout: float = 120.0
    watch_timeout: float = 300.0  # client-go reflector minWatchTimeout (5 min), spread to [t, 2t)
    # A watch that ends sooner than this without delivering anything counts as a failure, so a
    # server that keeps closing streams at once is retried with backoff, not in a hot loop.
    min_healthy_watch: float = 1.0
    watch_read_slack: float = 30.0  # idle read timeout beyond the watch's own timeoutSeconds
    page_size: int = 500  # client-go pager's default page size
    # A new leader's catch-up lists only if no event or bookmark has brought an informer to the
    # Lease write's revision within this time: a busy cluster (where a list costs the API server
    # seconds) gets there by events in tens of milliseconds, a quiet one lists.
    catch_up_grace: float = 0.2
    # A quiet collection whose store holds fewer objects than this catches up by a list at the
    # revision (tens of milliseconds for a small one); a bigger one by a short watch's bookmark,
    # which costs one bookmark tick (about a second) whatever the size (docs/benchmarks.md).
    catch_up_list_below: int = 2000
    # client-go reflector: 800 ms doubling to 30 s, jittered to [d, 2d) — never a fast retry
    # loop against a server that is down.
    retry: RetryPolicy = field(
        default_factory=lambda: RetryPolicy(initial=1.6, cap=60.0, max_attempts=None, min_share=0.5)
    )


@dataclass(frozen=True, slots=True)
class EventTimings:
    # Writes wait for a token, as kube-scheduler's event client waits on its clientConnection
    # limiter (defaults qps 50, burst 100); events are not dropped for the rate.
    qps: float = 50.0
    burst: int = 100
    writers: int = 8  # writes in flight at once (upstream: one goroutine per event)
    # client-go's event spam filter: a burst of 25 per object, then one per 5 minutes.
    per_object_qps: float = 1 / 300
    per_object_burst: int = 25
    series_window: float = 360.0  # client-go events finishTime (6 min)
    flush_interval: float = 30.0  # series counts are written this often
    drain_timeout: float = 5.0  # at shutdown
    # Events waiting for a token or a writer; beyond this they are dropped and counted. Upstream
    # queues without bound (a goroutine per event waits on the limiter).
    queue_size: int = 10_000


@dataclass(frozen=True, slots=True)
class EvictionTimings:
    max_rate_wait: float = 120.0  # a victim waits this long for a token, then the preemption is deferred
    rate_poll: float = 5.0  # re-check the limits at least this often while waiting
    nomination_settle: float = 5.0  # how long to wait for the reporter's nomination write
    nomination_poll: float = 0.1
    in_flight_slack: float = 60.0  # an evicted pod still around after its grace + this stops counting
    requeue_initial: float = 1.0  # a failed candidate retries after this, doubling
    requeue_cap: float = 60.0
    dry_run_memory: float = 300.0  # the same dry-run decision for a preemptor is reported again after this
    dry_run_retry: float = 30.0  # a preemptor under a dry-run policy retries this often
    api_retry: RetryPolicy = field(
        default_factory=lambda: RetryPolicy(initial=0.5, cap=10.0, max_attempts=5, max_retry_after=30.0)
    )


@dataclass(frozen=True, slots=True)
class AdapterTimings:
    """The timings of every adapter, as one value the operator's configuration carries."""

    api: ApiTimings = field(default_factory=ApiTimings)
    leader: LeaderTimings = field(default_factory=LeaderTimings)
    informer: InformerTimings = field(default_factory=InformerTimings)
    events: EventTimings = field(default_factory=EventTimings)
    eviction: EvictionTimings = field(default_factory=EvictionTimings)
    status_interval: float = 2.0  # at most one status write per custom resource per interval
    pod_status_writers: int = 4  # concurrent pods/status writers


DEFAULTS = AdapterTimings()
