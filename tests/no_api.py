"""The API client of an adapter whose calls the test replaces: never touched."""

from typing import cast

from policy_scheduler.kube.client import ApiClient

NO_API = cast(ApiClient, None)
