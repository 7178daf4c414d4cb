"""The fake kind: templates are JSON documents whose {name} fields take the values; at most two GPUs a job."""

from __future__ import annotations

import json
from typing import Any

from clusters.backends.kind import (
    ActionRefused,
    Kind,
    Preview,
    Rendered,
    RenderRefused,
    RenderRequest,
    Scaled,
    ServerPanel,
)

from .backend import MemoryBackend
from .settings import MemorySettings

MAX_GPUS = 2  # the default of its max_gpus setting


class TooManyGpus(RenderRefused):
    """The kind's own refusal: jobs shows its message as it is."""


def _fill(body: str, values: dict[str, Any]) -> str:
    document = json.loads(body)  # a body that is no JSON raises ValueError
    return json.dumps({key: str(value).format(**values) for key, value in document.items()}, sort_keys=True)


class FakeKind(Kind):
    name = "fake"
    label = "Memory (a test's kind)"
    templates = "fake"
    backend_class = MemoryBackend
    cluster_settings = MemorySettings
    admin_fieldsets = (("Memory", {"fields": ["lab_dir", "max_gpus", "slots_free"]}),)

    def render(self, request: RenderRequest) -> Rendered:
        gpus = int(request.values.get("gpus", 0) or 0)
        most = MemorySettings.of(request.cluster.kind_settings).max_gpus
        if gpus > most:
            raise TooManyGpus(f"The memory cluster holds at most {most} GPUs a job; ask for {most} or fewer.")
        return Rendered(script=_fill(request.template.body, {**request.values, "job": request.job_id}), gpus=gpus)

    def preview(self, body: str, parameters: Any, cluster: Any = None) -> Preview:
        values = {p["name"]: p.get("default") for p in parameters or []}
        try:
            return Preview(script=_fill(body, {**values, "job": "preview"}))
        except (ValueError, KeyError) as exc:
            return Preview(errors=[f"The body must be a JSON object whose {{fields}} are parameters ({exc})."])

    def server(self, job) -> ServerPanel:
        return ServerPanel(
            title="In memory",
            facts=(("Slot", job.scheduler_id or "not yet"),),
            scalable=True,
            replicas=job.gpus,
            max_replicas=MAX_GPUS,
        )

    def plan_scale(self, job, replicas: int) -> Scaled:
        if not 0 <= replicas <= MAX_GPUS:
            raise ActionRefused(f"Pick between 0 and {MAX_GPUS} copies.")
        return Scaled(script=job.script, gpus=replicas)  # one GPU a copy

    def scale(self, job, replicas: int) -> str:
        return f"Now {replicas} copies in memory."
