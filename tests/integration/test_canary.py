"""A canary secret stored as a credential must never appear in any page, API response, log, task message or event."""

import os

import redis
from django.urls import reverse

from clusters.models import ClusterAccount, CredentialEvent
from jobs.models import JobEvent

CANARY = "canary-5b1e0f27-never-print-me"


def test_canary_credential_never_leaks(
    worker,
    login,
    api_for,
    client,
    alice,
    instructor,
    admin_user,
    cluster,
    sleep_template,
    course,
    job_state,
    caplog,
    services,
):
    # Alice registers an account whose password is the canary; the cluster refuses it, so errors get written too.
    response = login(alice).post(
        reverse("profile"),
        {
            "cluster": cluster.pk,
            "username": services["GPULAB_PERSONAL_USER"],
            "auth_method": "password",
            "secret": CANARY,
        },
    )
    assert response.status_code == 302
    account = ClusterAccount.objects.get(user=alice)
    assert account.secret() == CANARY and CANARY not in account.secret_encrypted
    launched = api_for(alice).post("/api/v1/jobs/", {"template": "sleep-echo", "cluster": "local"}, format="json")
    job = job_state(launched.json() and alice.jobs.get(), "submit_failed", timeout=60)
    assert "refused the login" in job.error

    seen: list[str] = [launched.content.decode()]
    student = login(alice)
    for url in [
        reverse("jobs:detail", args=[job.pk]),
        reverse("jobs:my_jobs"),
        reverse("profile"),
        reverse("jobs:catalog"),
        reverse("jobs:log", args=[job.pk]),
        reverse("jobs:status", args=[job.pk]),
    ]:
        seen.append(student.get(url).content.decode())
    api = api_for(alice)
    for url in [
        "/api/v1/jobs/",
        f"/api/v1/jobs/{job.pk}/",
        f"/api/v1/jobs/{job.pk}/log/",
        "/api/v1/clusters/",
        "/api/v1/templates/",
        "/api/v1/schema/",
    ]:
        seen.append(api.get(url).content.decode())
    seen.append(login(instructor).get(reverse("courses:jobs", args=[course.slug])).content.decode())
    admin = login(admin_user)
    for url in [
        reverse("admin:clusters_clusteraccount_change", args=[account.pk]),
        reverse("admin:clusters_clusteraccount_changelist"),
        reverse("admin:clusters_cluster_change", args=[cluster.pk]),
        reverse("admin:clusters_credentialevent_changelist"),
        reverse("admin:jobs_job_change", args=[job.pk]),
    ]:
        page = admin.get(url)
        assert page.status_code == 200, url
        seen.append(page.content.decode())
    seen.append(job.error)
    assert_no_canary(seen, worker, caplog)


def assert_no_canary(seen: list[str], worker, caplog) -> None:
    """The pages and responses a test collected, plus every store the portal writes: none holds the canary."""
    seen = [
        *seen,
        worker.logs(),
        caplog.text,
        *JobEvent.objects.values_list("message", flat=True),
        *(str(row) for row in CredentialEvent.objects.values_list()),
        _redis_dump(),
    ]
    leaks = [text[:200] for text in seen if CANARY in text]
    assert leaks == []


def _redis_dump() -> str:
    """Every key and value in Redis: queued task messages, results, the cache."""
    client = redis.Redis.from_url(os.environ["REDIS_URL"])
    parts = []
    for key in client.scan_iter():
        kind = client.type(key).decode()
        if kind == "string":
            parts.append(repr(client.get(key)))
        elif kind == "list":
            parts.extend(repr(v) for v in client.lrange(key, 0, -1))
        elif kind == "hash":
            parts.extend(repr(v) for v in client.hgetall(key).items())
        elif kind in {"set", "zset"}:
            parts.extend(repr(v) for v in (client.smembers(key) if kind == "set" else client.zrange(key, 0, -1)))
    return "\n".join(parts)


def test_canary_kubernetes_token_never_leaks(
    worker, login, api_for, alice, instructor, admin_user, course, k8s_cluster, k8s_templates, kube, job_state, caplog
):
    account = k8s_cluster.service_account()
    account.set_secret(kube.kubeconfig(CANARY))
    account.save()
    assert CANARY not in account.secret_encrypted
    params = {"gpus": 0, "replicas": 1, "max_replicas": 1}
    running = api_for(alice).post(
        "/api/v1/jobs/", {"template": "k8s-tinylm-server", "cluster": "k8s", "params": params}, format="json"
    )
    job = job_state(alice.jobs.get(), "pending")
    kube.deny("create deployments")  # the next one fails with the API server's message
    refused = api_for(alice).post(
        "/api/v1/jobs/", {"template": "k8s-tinylm-server", "cluster": "k8s", "params": params}, format="json"
    )
    failed = job_state(alice.jobs.exclude(pk=job.pk).get(), "submit_failed")
    assert "forbidden" in failed.error

    seen = [running.content.decode(), refused.content.decode(), failed.error]
    student = login(alice)
    for target in (job, failed):
        for name in ("jobs:detail", "jobs:log", "jobs:status", "jobs:load_test_report"):
            seen.append(student.get(reverse(name, args=[target.pk])).content.decode())
        seen.append(api_for(alice).get(f"/api/v1/jobs/{target.pk}/").content.decode())
    seen.append(api_for(alice).get("/api/v1/clusters/").content.decode())
    admin = login(admin_user)
    for url in [
        reverse("admin:clusters_clusteraccount_change", args=[account.pk]),
        reverse("admin:clusters_cluster_change", args=[k8s_cluster.pk]),
        reverse("admin:cluster_test", args=[k8s_cluster.pk]),
        reverse("admin:jobs_job_change", args=[failed.pk]),
    ]:
        page = admin.get(url)
        assert page.status_code == 200, url
        seen.append(page.content.decode())
    assert_no_canary(seen, worker, caplog)
