"""`policy-scheduler run`, from the command line to scheduling, in the order it happens:

1. the collector pauses until the informers have synced (service/collector.py says why);
2. the API client is made from the kubeconfig or the service account, and every informer's first
   list is asked for at once (kube/first_lists.py);
3. the operator's modules are imported off the event loop, which receives those lists meanwhile;
   the CRDs are installed with --install-crds;
4. the Operator, the composition root, builds every component, and starts its secure server,
   every informer (the policy objects' too) and leader election;
5. once the informers have listed, the collector resumes, the engine starts scheduling with the
   policies the informers applied (a new leader first catches up with the cluster at the
   Lease's revision: kube/leadership_gate.py), and kopf runs the PriorityClassMirror controller;
6. on SIGINT or SIGTERM (or when a component that must not end does), everything stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from policy_scheduler.kube.errors import StartError
from policy_scheduler.scheduler.versioning.features import FeatureGateError
from policy_scheduler.service.collector import RESUME_DEADLINE, StartupCollector
from policy_scheduler.service.config import OperatorConfig

if TYPE_CHECKING:
    from policy_scheduler.service.operator import Operator


class Startup:
    def __init__(self, config: OperatorConfig) -> None:
        self.config = config
        self.collector = StartupCollector()

    def run(self) -> int:
        """The operator's whole life; 1 if a component failed."""
        self.collector.pause()
        try:
            return asyncio.run(self._main())
        except StartError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        except FeatureGateError as exc:
            print(f"error: --feature-gates: {exc}", file=sys.stderr)
            return 2

    async def _main(self) -> int:
        from policy_scheduler.kube.client import make_api_client
        from policy_scheduler.kube.first_lists import FirstLists, informer_first_lists

        stop = _stop_on_signals()
        deadline = asyncio.get_running_loop().call_later(
            RESUME_DEADLINE, self.collector.resume, "no first sync before the deadline"
        )
        api = await make_api_client(self.config.kubeconfig)
        timings = self.config.timings.informer
        first_lists = FirstLists(api, informer_first_lists(timings.page_size), timings.list_timeout)
        try:
            # The API server prepares the lists while this thread imports the rest (and the loop
            # receives them).
            operator_class = await asyncio.to_thread(_import_operator)
            if self.config.install_crds:
                # Imported only here: rendering CRDs is not needed otherwise.
                from policy_scheduler.kube.crdinstall import install_crds

                await install_crds(api, self.config.timings.api)
            operator = operator_class(api, self.config, first_lists)
            try:
                await operator.start()
                if await _unless_stopped(operator.wait_synced(), stop):
                    self.collector.resume()
                    deadline.cancel()
                    operator.start_scheduling(stop)
                    await stop.wait()
            finally:
                await operator.stop()
        finally:
            await first_lists.close()
            await api.close()
        return 1 if operator.failed else 0


def _import_operator() -> type[Operator]:
    from policy_scheduler.service.operator import Operator

    return Operator


def _stop_on_signals() -> asyncio.Event:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    return stop


async def _unless_stopped(work: Coroutine[Any, Any, object], stop: asyncio.Event) -> bool:
    """Await `work`, or until `stop` is set; whichever is left over is cancelled. True if `work`
    finished first."""
    waiter = asyncio.ensure_future(work)
    stopped = asyncio.ensure_future(stop.wait())
    finished, _ = await asyncio.wait([waiter, stopped], return_when=asyncio.FIRST_COMPLETED)
    waiter.cancel()
    stopped.cancel()
    return waiter in finished
