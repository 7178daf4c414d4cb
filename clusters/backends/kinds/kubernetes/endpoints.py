"""What a student does with a running Kubernetes server from its job page: find its endpoint, scale it,
send it a prompt (Try it) through the API server's service proxy, and run the bundled load generator
against it as a Job whose report the page shows.

Every function takes a job the caller already got through jobs.access; nothing here looks jobs up.
"""

from __future__ import annotations

import codecs
import json
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from django.utils import timezone

from clusters import kinds
from clusters.backends import BackendError
from core import load_reports
from core.choices import EndpointAPI, JobState

from ... import kind
from ...kind import Scaled
from .backend import KubernetesBackend
from .launch import first_service
from .manifests import (
    LABEL_ROLE,
    WORKLOAD_KINDS,
    ManifestContext,
    check_object,
    dump,
    load,
    pod_specs,
    requested_resources,
)

LOADTEST_ROLE = "loadtest"
LOADGEN_IMAGE = "gpulab/tinylm-server:0.1.0-cpu"  # the bundled server image carries the load generator
# The container whose log holds a load generator's report: the load test's own, and, as the MLBatch handout names it,
# the one beside a server in a batch-inference job's pod.
LOADGEN_CONTAINER = "load-generator"
MAX_PROMPT_CHARS = 4000
MAX_REPLICAS = 8


ActionRefused = kind.ActionRefused  # the kind's own refusal; the job page and the API show its message


def _backend(job) -> KubernetesBackend:
    return KubernetesBackend(job.cluster, job.account)


@dataclass
class Server:
    """A Kubernetes job's objects, read from the YAML it was submitted with."""

    job: Any  # a jobs.models.Job the caller got through jobs.access

    @cached_property
    def objects(self) -> list[dict]:
        if kinds.backend_class(self.job.cluster.kind) is not KubernetesBackend or not self.job.script:
            return []
        return load(self.job.script)

    @property
    def namespace(self) -> str:
        return self.objects[0]["metadata"]["namespace"] if self.objects else ""

    @property
    def workload(self) -> dict | None:
        return next((o for o in self.objects if o["kind"] in {"Deployment", "Job", "MPIJob"}), None)

    @property
    def runs_load_generator(self) -> bool:
        """Its own pod runs a load generator beside the server (a container named load-generator)."""
        pods = [pod for obj in self.objects if obj["kind"] in WORKLOAD_KINDS for pod in pod_specs(obj)]
        return any(LOADGEN_CONTAINER in [c.get("name") for c in pod.get("containers") or []] for pod in pods)

    @property
    def scalable(self) -> bool:
        return bool(self.workload and self.workload["kind"] == "Deployment")

    @property
    def service(self) -> tuple[str, int] | None:
        return first_service(self.objects)

    @property
    def url(self) -> str:
        for obj in self.objects:
            if obj["kind"] == "Ingress":
                return f"http://{obj['spec']['rules'][0]['host']}/"
        return ""

    @property
    def port_forward(self) -> str:
        if self.service is None:
            return ""
        name, port = self.service
        return shlex.join(["kubectl", "-n", self.namespace, "port-forward", f"service/{name}", f"{port}:{port}"])

    @property
    def replicas(self) -> int:
        return int((self.workload or {}).get("spec", {}).get("replicas", 1)) if self.scalable else 0

    @property
    def model(self) -> str:
        return str(self.job.params.get("model") or "tinylm")


def _require_running_server(job) -> Server:
    server = Server(job)
    if not server.objects:
        raise ActionRefused("Only Kubernetes jobs have servers.")
    if job.state != JobState.RUNNING:
        raise ActionRefused(f"The job is {job.get_state_display().lower()}; it must be running.")
    return server


# -- scale -------------------------------------------------------------------------------------------------------
def plan_scale(job, replicas: int) -> Scaled:
    """The objects with `replicas` (and the autoscaler held there), and the GPUs they could hold; nothing is sent."""
    server = _require_running_server(job)
    workload = server.workload
    if workload is None or not server.scalable:
        raise ActionRefused("Only servers (Deployments) can be scaled; this job runs to completion.")
    if not 0 <= replicas <= MAX_REPLICAS:
        raise ActionRefused(f"Pick between 0 and {MAX_REPLICAS} replicas.")
    objects = server.objects
    workload["spec"]["replicas"] = replicas
    for hpa in (o for o in objects if o["kind"] == "HorizontalPodAutoscaler"):  # what the backend sets too
        hpa["spec"]["minReplicas"] = replicas
        hpa["spec"]["maxReplicas"] = max(replicas, hpa["spec"].get("maxReplicas", replicas))
    gpus = requested_resources(objects).gpus
    if gpus > job.template.max_gpus:
        raise ActionRefused(f"{replicas} replicas could hold {gpus} GPUs; the template allows {job.template.max_gpus}.")
    return Scaled(script=dump(objects), gpus=gpus)


def scale(job, replicas: int) -> str:
    return _backend(job).scale(job.scheduler_id, replicas)


# -- Try it ------------------------------------------------------------------------------------------------------
def prompt_request(api: str, model: str, prompt: str) -> tuple[str, dict]:
    """The seed lab's requests: Ollama's /api/generate or OpenAI's /v1/chat/completions, streamed."""
    if api == EndpointAPI.OLLAMA:
        return "api/generate", {"model": model, "prompt": prompt, "stream": True}
    body = {"model": model, "messages": [{"role": "user", "content": prompt}], "stream": True, "max_tokens": 256}
    return "v1/chat/completions", body


def answer_text(api: str, chunks: Iterator[bytes]) -> Iterator[str]:
    """The generated text from a streamed answer (Ollama NDJSON or OpenAI server-sent events)."""
    decoder, pending = codecs.getincrementaldecoder("utf-8")(errors="replace"), ""
    for chunk in chunks:
        pending += decoder.decode(chunk)
        *lines, pending = pending.split("\n")
        for line in lines:
            text = _piece(api, line.strip())
            if text:
                yield text
    text = _piece(api, (pending + decoder.decode(b"", final=True)).strip())
    if text:
        yield text


def _piece(api: str, line: str) -> str:
    if api == EndpointAPI.OPENAI and line.startswith("data:"):
        line = line[len("data:") :].strip()
    if not line.startswith("{"):  # SSE comments, [DONE], blank keep-alives
        return ""
    try:
        event = json.loads(line)
    except ValueError:
        return ""
    if "error" in event:
        error = event["error"]
        return f"\n[error: {error.get('message') if isinstance(error, dict) else error}]"
    if api == EndpointAPI.OLLAMA:
        return event.get("response") or (event.get("message") or {}).get("content") or ""
    choices = event.get("choices") or [{}]
    return (choices[0].get("delta") or {}).get("content") or choices[0].get("text") or ""


def try_it(job, prompt: str) -> Iterator[str]:
    server = _require_running_server(job)
    api = job.template.endpoint_api
    if not api or server.service is None:
        raise ActionRefused("This job has no inference API to try.")
    prompt = prompt.strip()
    if not prompt or len(prompt) > MAX_PROMPT_CHARS:
        raise ActionRefused(f"Write a prompt of 1 to {MAX_PROMPT_CHARS} characters.")
    path, body = prompt_request(api, server.model, prompt)
    name, port = server.service
    chunks = _backend(job).proxy(job.scheduler_id, name, port, path, body)
    return answer_text(api, chunks)


# -- Load test ---------------------------------------------------------------------------------------------------
def start_load_test(job, *, prompts: int = 64, concurrency: int = 8, output_len: int = 64) -> str:
    server = _require_running_server(job)
    api = job.template.endpoint_api
    if not api or server.service is None:
        raise ActionRefused("This job has no inference API to load-test.")
    if not (1 <= prompts <= 1000 and 1 <= concurrency <= 64 and 1 <= output_len <= 512):
        raise ActionRefused("Use 1 to 1000 prompts, 1 to 64 concurrent requests and 1 to 512 output tokens.")
    name, port = server.service
    ctx = ManifestContext(
        job_id=str(job.pk), namespace=server.namespace, owner=job.owner.username, course=job.course.slug
    )
    loadtest_name = f"{ctx.job_name}-load-{timezone.now():%H%M%S}"
    args = [
        "--base-url",
        f"http://{name}:{port}",
        "--api",
        api,
        "--model",
        server.model,
        "--num-prompts",
        str(prompts),
        "--max-concurrency",
        str(concurrency),
        "--output-len",
        str(output_len),
        "--report-line",
    ]
    obj: dict[str, Any] = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": loadtest_name},
        "spec": {
            "backoffLimit": 0,
            "activeDeadlineSeconds": 900,
            "ttlSecondsAfterFinished": 3600,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "securityContext": {"runAsNonRoot": True, "runAsUser": 10001},
                    "containers": [
                        {
                            "name": LOADGEN_CONTAINER,
                            "image": LOADGEN_IMAGE,
                            "command": ["python", "/app/inference/loadgen.py", *args],
                            "resources": {
                                "requests": {"cpu": "500m", "memory": "256Mi"},
                                "limits": {"cpu": "1", "memory": "512Mi"},
                            },
                            "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
                        }
                    ],
                }
            },
        },
    }
    check_object(obj, ctx)
    for labels in (obj["metadata"]["labels"], obj["spec"]["template"]["metadata"]["labels"]):
        labels[LABEL_ROLE] = LOADTEST_ROLE
    try:
        _backend(job).create_extra(job.scheduler_id, obj)
    except BackendError as exc:
        raise ActionRefused(f"The load test could not start: {exc}") from None
    return loadtest_name


@dataclass
class LoadTestReport:
    name: str
    phase: str
    figures: dict | None
    error: str = ""


REPORT_READ_BYTES = 256 * 1024  # a report ends a log of a few pages (the benchmark's progress bar is off)
NO_REPORT = "The load generator ended without a report; its log says why."


def load_test_report(job) -> LoadTestReport | None:
    """The newest load test's state, and its figures once the load generator printed them: the one in the job's own
    pod where its template runs one, else the newest the student started from the page."""
    if not job.scheduler_id:
        return None
    if Server(job).runs_load_generator:
        return _report_in_job(job)
    backend = _backend(job)
    pods = backend.pods(job.scheduler_id, LOADTEST_ROLE)
    if not pods:
        return None
    pod = max(pods, key=lambda p: p["metadata"].get("creationTimestamp") or "")
    name, phase = pod["metadata"]["name"], (pod.get("status") or {}).get("phase", "Pending")
    figures = _figures(backend, job, f"{name}/{LOADGEN_CONTAINER}")
    return LoadTestReport(name, phase, figures or None, NO_REPORT if phase == "Failed" and not figures else "")


def _report_in_job(job) -> LoadTestReport | None:
    """The report of the load generator beside the server in the job's own pod (the newest such pod: a reset makes
    the pod again), and how far its container got."""
    backend = _backend(job)
    pods = [p for p in backend.pods(job.scheduler_id, "") if LOADGEN_CONTAINER in _container_names(p)]
    if not pods:
        return None
    pod = max(pods, key=lambda p: p["metadata"].get("creationTimestamp") or "")
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    state = next(((s.get("state") or {}) for s in statuses if s.get("name") == LOADGEN_CONTAINER), {})
    phase = "Finished" if "terminated" in state else "Running" if "running" in state else "Waiting"
    figures = _figures(backend, job, f"{pod['metadata']['name']}/{LOADGEN_CONTAINER}")
    return LoadTestReport(
        load_reports.IN_JOB, phase, figures or None, NO_REPORT if phase == "Finished" and not figures else ""
    )


def _container_names(pod: dict) -> list[str]:
    return [c.get("name", "") for c in (pod.get("spec") or {}).get("containers") or []]


def _figures(backend: KubernetesBackend, job, stream: str) -> dict:
    chunk = backend.read_log(job.pk, 0, REPORT_READ_BYTES, scheduler_id=job.scheduler_id, stream=stream)
    return load_reports.read_report(chunk.data)
