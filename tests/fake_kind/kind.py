"""The fake kind: templates are JSON documents whose {name} fields take the values; at most two GPUs a job."""

from __future__ import annotations

import json
from typing import Any

from clusters.backends.kind import Kind, Preview, Rendered, RenderRefused, RenderRequest

from .backend import MemoryBackend

MAX_GPUS = 2


class TooManyGpus(RenderRefused):
    """The kind's own refusal: jobs shows its message as it is."""


def _fill(body: str, values: dict[str, Any]) -> str:
    document = json.loads(body)  # a body that is no JSON raises ValueError
    return json.dumps({key: str(value).format(**values) for key, value in document.items()}, sort_keys=True)


class FakeKind(Kind):
    name = "fake"
    templates = "fake"
    backend_class = MemoryBackend
    admin_fieldsets = (("Memory: nothing to set", {"fields": ["lab_dir"]}),)

    def render(self, request: RenderRequest) -> Rendered:
        gpus = int(request.values.get("gpus", 0) or 0)
        if gpus > MAX_GPUS:
            raise TooManyGpus(f"The memory cluster holds at most {MAX_GPUS} GPUs a job; ask for {MAX_GPUS} or fewer.")
        return Rendered(script=_fill(request.template.body, {**request.values, "job": request.job_id}), gpus=gpus)

    def preview(self, body: str, parameters: Any, cluster: Any = None) -> Preview:
        values = {p["name"]: p.get("default") for p in parameters or []}
        try:
            return Preview(script=_fill(body, {**values, "job": "preview"}))
        except (ValueError, KeyError) as exc:
            return Preview(errors=[f"The body must be a JSON object whose {{fields}} are parameters ({exc})."])
