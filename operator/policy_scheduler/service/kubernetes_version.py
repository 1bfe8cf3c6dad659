"""Follow the cluster's Kubernetes release: the API server's version (kube/server_version.py)
chooses the release semantics (scheduler/versioning/semantics.py) the profile store resolves
profiles for, unless --emulated-version names one.

The start-up calls `start` once before any profile is resolved (it raises FeatureGateError when
--feature-gates do not fit the release), then runs `run` for the rest of the operator's life.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from policy_scheduler.controllers.profile_store import ProfileStore
from policy_scheduler.kube.server_version import ServerVersionTimings, ServerVersionWatch
from policy_scheduler.scheduler.versioning.features import FeatureGateError
from policy_scheduler.scheduler.versioning.semantics import Semantics, choose_semantics
from policy_scheduler.scheduler.versioning.version import KubernetesVersion

if TYPE_CHECKING:
    from policy_scheduler.kube.client import ApiClient

log = logging.getLogger(__name__)

# The condition reason when a new API server version does not accept the operator's
# --feature-gates: the release followed so far stays.
FEATURE_GATES_REFUSED = "FeatureGatesRefused"


class KubernetesSemantics:
    def __init__(
        self,
        api: ApiClient,
        store: ProfileStore,
        *,
        emulated: KubernetesVersion | None = None,
        feature_gates: tuple[tuple[str, bool], ...] = (),
        timings: ServerVersionTimings | None = None,
    ) -> None:
        self.store = store
        self.emulated = emulated
        self.feature_gates = feature_gates
        self.watch = ServerVersionWatch(api, self._on_version, timings)
        self.started = False

    async def start(self) -> None:
        """Read the API server's version and apply its semantics; FeatureGateError if the
        operator's --feature-gates do not fit the release."""
        await self.watch.initial()
        self.started = True

    async def run(self) -> None:
        await self.watch.run()

    def _on_version(self, version: str | None, why: str) -> None:
        try:
            semantics = choose_semantics(
                version, emulated=self.emulated, feature_gates=self.feature_gates, unknown_because=why
            )
        except FeatureGateError as exc:
            if not self.started:
                raise
            log.error(
                "--feature-gates do not fit the API server's new version; the release followed so far stays",
                extra={"version": version, "error": str(exc)},
            )
            previous = self.store.semantics
            kept = previous.features.version
            refused = f"API server {version} does not accept --feature-gates ({exc}); kept {kept}"
            semantics = Semantics(previous.features, FEATURE_GATES_REFUSED, refused, version)
        self._log(semantics)
        self.store.set_semantics(semantics)

    @staticmethod
    def _log(semantics: Semantics) -> None:
        message = semantics.describe()
        if semantics.matches_cluster and not semantics.features.unimplemented():
            log.info("Kubernetes release semantics", extra={"semantics": message})
        else:
            log.warning("Kubernetes release semantics", extra={"semantics": message})
