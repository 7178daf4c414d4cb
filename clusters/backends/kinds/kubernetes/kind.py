"""The `kubernetes` kind as the registry hands it out: templates are objects, jobs live in a course's namespace,
servers can be scaled, tried and load-tested (endpoints.py), and the portal stops servers at their time limit
(a Deployment has none)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from typing import Any

from clusters.choices import AuthMethod
from core.course_choices import NamespaceMode

from ...base import BackendError
from ...kind import (
    ActionRefused,
    Kind,
    NotebookAddress,
    NotebookNotReady,
    Preview,
    Rendered,
    RenderRequest,
    Scaled,
    ServerPanel,
)
from ...queue import QueueSummary
from . import endpoints, kueue, launch, namespaces, notebook, shell
from .api import kubeconfig_contexts
from .backend import KubernetesBackend
from .kueue_sessions import KueueSessionHolds
from .manifests import ManifestError, dump, preview_context, render_manifests
from .plans import NamespacePlan
from .settings import KubernetesClusterSettings, KubernetesCourseSettings, cluster_settings, course_settings

MPIJOB_KIND = re.compile(r"^\s*kind:\s*MPIJob\s*$", re.MULTILINE)
RAYJOB_KIND = re.compile(r"^kind: RayJob$", re.MULTILINE)  # as manifests.dump writes a job's objects


class KubernetesKind(Kind):
    cluster_settings = KubernetesClusterSettings
    course_settings = KubernetesCourseSettings
    name = "kubernetes"
    label = "Kubernetes (API)"
    templates = "kubernetes"
    backend_class = KubernetesBackend
    admin_fieldsets = KubernetesBackend.admin_fieldsets
    course_fieldsets = (
        (
            "Kubernetes",
            {
                "fields": ["max_cpus", "max_memory_gb", "max_pods", "max_volumes", "namespace_mode", "ingress_host"],
                "description": "Per student. A namespace's quota is these limits times the students it holds.",
            },
        ),
        (
            "Kubernetes with Kueue",
            {
                "fields": ["kueue_local_queue", "kueue_preemption", "kueue_borrowing_limit", "kueue_lending_limit"],
                "description": "On a cluster where Test connection found Kueue, every job of the course goes in the "
                "course's queue.",
            },
        ),
    )
    telemetry_source = "metrics-api"
    portal_stops_at_time_limit = True
    auth_methods = frozenset({AuthMethod.TOKEN, AuthMethod.KUBECONFIG})
    isolation_note = (
        "Every student's objects are created with this cluster's one set of credentials. In a course with one "
        "namespace for the course, students' pods share it: they can use each other's volumes and reach each other's "
        "services. The portal's template checks keep a student's values out of code; they do not separate students. "
        "Where students must not reach each other's work, set the course's namespaces to one per student."
    )

    lab_holds = KueueSessionHolds  # the course's ClusterQueue gets a session's GPUs while it is on

    opens_terminals = True
    terminal_note = "A login shell in a container of the job's pod, through the Kubernetes API's exec (kubectl exec)."

    def terminal_targets(self, job) -> list[str]:
        return shell.targets(job)

    def open_terminal(self, job, *, cols: int, rows: int, target: str = "") -> shell.PodTerminal:
        return shell.open_shell(job, cols=cols, rows=rows, target=target)

    notebook_note = (
        "Notebooks live in the session's pod and are gone when it ends: download what you want to keep "
        "(File → Download) before its time limit."
    )

    def notebook_address(self, job) -> NotebookAddress:
        """The job's JupyterLab through the API server's service proxy (kubernetes/notebook.py)."""
        try:
            route = notebook.route(job)
        except notebook.NotReady as exc:
            raise NotebookNotReady(str(exc)) from None
        return NotebookAddress(
            url=route.url,
            token=route.token,
            headers=route.headers,
            token_in_query=True,
            ca_pem=route.ca_pem,
            cert_file=route.cert_file,
            key_file=route.key_file,
            rewritten_prefix=route.rewritten_prefix,
        )

    def dashboard_name(self, job) -> str:
        return "Ray dashboard" if RAYJOB_KIND.search(job.script or "") else ""

    def dashboard_address(self, job) -> NotebookAddress:
        """The RayJob's Ray dashboard (its head's service, port 8265) through the API server's proxy (ray.py)."""
        try:
            route = notebook.dashboard_route(job)
        except notebook.NotReady as exc:
            raise NotebookNotReady(str(exc)) from None
        return NotebookAddress(
            url=route.url,
            token="",
            headers=route.headers,
            token_in_query=True,
            ca_pem=route.ca_pem,
            cert_file=route.cert_file,
            key_file=route.key_file,
            rewritten_prefix=route.rewritten_prefix,
        )

    def gpu_share(self, cluster) -> int:
        return cluster_settings(cluster).gpu_sharing_factor

    def gpu_metrics_url(self, cluster) -> str:
        return cluster_settings(cluster).prometheus_url

    def runs_template(self, cluster, template) -> bool:
        return cluster_settings(cluster).has_mpi_operator or not self.needs_mpi_operator(template.body)

    def shared_by_course(self, course) -> str:
        shared = course_settings(course).namespace_mode == NamespaceMode.PER_COURSE
        return f"every student of {course} runs pods in one Kubernetes namespace" if shared else ""

    def credential_problem(self, cluster, method: str, secret: str) -> str:
        """A kubeconfig as the portal takes it: parsed, logging in by no program, holding the cluster's context."""
        if method != AuthMethod.KUBECONFIG:
            return ""
        try:
            contexts = kubeconfig_contexts(secret)
        except BackendError as exc:
            return str(exc)
        context = cluster_settings(cluster).kube_context
        if context and context not in contexts:
            return f"the kubeconfig has no context {context}; it has {', '.join(contexts)}."
        return ""

    def address(self, cluster) -> str:
        return cluster.api_url or "kubeconfig"

    def connection_target(self, cluster) -> str:
        context = cluster_settings(cluster).kube_context
        context = f" (context {context})" if context else ""
        return (cluster.api_url or "API server from the kubeconfig") + context

    def tests_over_ssh(self, cluster) -> bool:
        return False  # the API server's version and, by SelfSubjectAccessReview, what the portal may do

    def host_key_note(self, cluster) -> str:
        return "— (TLS: CA certificate)"

    def connection_verdict(self, cluster, ok: bool) -> str:
        return "Connected; all permissions present" if ok else "Connected, but permissions are missing"

    def render(self, request: RenderRequest) -> Rendered:
        rendered = launch.render(
            request.template, request.course, request.user, request.values, request.job_id, cluster=request.cluster
        )
        return Rendered(script=rendered.script, gpus=rendered.resources.gpus)

    def preview(self, body: str, parameters: Any, cluster: Any = None) -> Preview:
        from core.templating.params import SchemaError, parse_schema

        result = Preview()
        try:
            schema = parse_schema(parameters)
            values = {p.name: p.default for p in schema}
            result.script = dump(render_manifests(body, schema, values, preview_context()))
        except (SchemaError, ManifestError) as exc:
            result.errors.append(str(exc))
        return result

    def needs_mpi_operator(self, body: str) -> bool:
        return bool(MPIJOB_KIND.search(body))

    def template_requirement(self, body: str) -> str:
        return "MPIJobs (it needs the MPI Operator)" if self.needs_mpi_operator(body) else ""

    def prepare_submit(self, course, user, cluster) -> NamespacePlan:
        plan = namespaces.plan_for(course, user)
        queue = kueue.plan_for(course, cluster)
        return dataclasses.replace(plan, queue=queue) if queue else plan

    def queue_summary(self, cluster, course) -> QueueSummary | None:
        if not kueue.uses_kueue(cluster):
            return None
        return KubernetesBackend(cluster, cluster.service_account()).course_queue(course)

    def time_limit_minutes(self, job) -> int | None:
        """A Job's activeDeadlineSeconds, or the portal stopping a server: the template's limit either way."""
        return super().time_limit_minutes(job) or job.template.max_minutes

    def log_streams(self, job) -> list[str]:
        if not job.scheduler_id:
            return []
        return self.backend(job.cluster, job.account).log_streams(job.scheduler_id)

    def server(self, job) -> ServerPanel:
        server = endpoints.Server(job)
        return ServerPanel(
            title="On Kubernetes",
            facts=(("Namespace", server.namespace),),
            url=server.url,
            command=server.port_forward,
            command_help="From your laptop (with kubectl set up for this cluster):",
            scalable=server.scalable,
            replicas=server.replicas,
            max_replicas=endpoints.MAX_REPLICAS,
            answers_prompts=bool(job.template.endpoint_api and server.service),
            reports_load=server.runs_load_generator,
        )

    def plan_scale(self, job, replicas: int) -> Scaled:
        return endpoints.plan_scale(job, replicas)

    def scale(self, job, replicas: int) -> str:
        return endpoints.scale(job, replicas)

    def try_it(self, job, prompt: str) -> Iterator[str]:
        return endpoints.try_it(job, prompt)

    def start_load_test(self, job, *, prompts: int, concurrency: int, output_len: int) -> str:
        return endpoints.start_load_test(job, prompts=prompts, concurrency=concurrency, output_len=output_len)

    def load_test_report(self, job) -> endpoints.LoadTestReport | None:
        return endpoints.load_test_report(job)

    def telemetry_note(self, cluster) -> str:
        if cluster_settings(cluster).prometheus_url:
            return ""
        return (
            "GPU charts need the cluster's Prometheus (dcgm-exporter); CPU and memory come from the metrics API "
            "every 15 s."
        )


__all__ = ["ActionRefused", "KubernetesKind"]
