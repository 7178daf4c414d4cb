"""Launching through the form and the API: validation, refusals, quotas, the queued row and its event."""

import pytest
from django.urls import reverse

from jobs.models import Job, JobTemplate

pytestmark = pytest.mark.django_db


def test_launch_form_creates_a_queued_job_and_queues_submit_on_commit(
    login, alice, cluster, sleep_template, course, django_capture_on_commit_callbacks, monkeypatch
):
    sent = []
    monkeypatch.setattr("core.enqueue.send", lambda name, args: sent.append((name, args)))
    url = reverse("jobs:launch", args=[course.slug, sleep_template.slug])
    form = login(alice).get(url).content.decode()
    assert 'name="param_seconds"' in form and 'max="600"' in form
    data = {
        "cluster": cluster.pk,
        "param_partition": "debug",
        "param_time_minutes": 2,
        "param_gpus_per_node": 0,
        "param_seconds": 3,
        "param_exit_code": 0,
        "param_message": "hi-there",
    }
    with django_capture_on_commit_callbacks(execute=True):
        response = login(alice).post(url, data)
    job = Job.objects.get()
    assert response.status_code == 302 and response.url == job.get_absolute_url()
    assert job.state == "queued" and job.owner == alice and job.params["seconds"] == 3
    assert "printf '%s\\n' hi-there" in job.script and "#SBATCH --time=2" in job.script
    assert sent == [("workers.tasks.submit_job", (str(job.pk),))]
    assert job.events.get().kind == "launch"


def test_launch_form_shows_field_errors(login, alice, cluster, sleep_template, course):
    url = reverse("jobs:launch", args=[course.slug, sleep_template.slug])
    response = login(alice).post(url, {"cluster": cluster.pk, "param_seconds": 9999, "param_partition": "debug"})
    assert response.status_code == 400
    assert "Ensure this value is less than or equal to 600" in response.content.decode()
    assert not Job.objects.exists()


def test_template_outside_course_is_not_offered(login, carol, sleep_template, course, other_course):
    assert login(carol).get(reverse("jobs:launch", args=[course.slug, sleep_template.slug])).status_code == 404
    assert login(carol).get(reverse("jobs:launch", args=[other_course.slug, sleep_template.slug])).status_code == 404


class TestApiLaunch:
    def test_201_with_the_job(self, api_for, alice, cluster, sleep_template):
        response = api_for(alice).post(
            "/api/v1/jobs/", {"template": "sleep-echo", "cluster": "local", "params": {"seconds": 2}}, format="json"
        )
        assert response.status_code == 201, response.content
        body = response.json()
        assert body["state"] == "queued" and body["params"]["seconds"] == 2 and body["owner"] == "alice"

    def test_400_with_per_field_errors(self, api_for, alice, cluster, sleep_template):
        response = api_for(alice).post(
            "/api/v1/jobs/",
            {"template": "sleep-echo", "cluster": "local", "params": {"seconds": -1, "message": "a\nb", "x": 1}},
            format="json",
        )
        assert response.status_code == 400
        errors = response.json()["params"]
        assert errors["seconds"] == ["Must be at least 0."]
        assert "control characters" in errors["message"][0]
        assert errors["x"] == ["This template has no such parameter."]

    def test_unknown_template_or_cluster_is_400(self, api_for, alice, cluster, sleep_template):
        client = api_for(alice)
        unknown_template = {"template": "nope", "cluster": "local"}
        assert "template" in client.post("/api/v1/jobs/", unknown_template, format="json").json()
        unknown_cluster = {"template": "sleep-echo", "cluster": "nope"}
        assert "cluster" in client.post("/api/v1/jobs/", unknown_cluster, format="json").json()

    def test_cluster_outside_course_is_refused_with_a_message(self, api_for, alice, sleep_template, course):
        from clusters.models import Cluster

        elsewhere = Cluster.objects.create(name="elsewhere", host="127.0.0.1")
        course.clusters.remove(*course.clusters.all())
        course.clusters.add(elsewhere)
        other = Cluster.objects.create(name="other", host="127.0.0.1")
        response = api_for(alice).post(
            "/api/v1/jobs/", {"template": "sleep-echo", "cluster": other.name}, format="json"
        )
        assert response.status_code == 400 and "No cluster with this name" in response.json()["cluster"][0]

    def test_draft_template_is_refused(self, api_for, alice, instructor, cluster, sleep_template, course):
        JobTemplate.objects.filter(pk=sleep_template.pk).update(status=JobTemplate.Status.DRAFT)
        response = api_for(alice).post("/api/v1/jobs/", {"template": "sleep-echo", "cluster": "local"}, format="json")
        assert response.status_code == 400  # a student does not see drafts at all
        response = api_for(instructor).post(
            "/api/v1/jobs/", {"template": "sleep-echo", "cluster": "local"}, format="json"
        )
        assert response.status_code == 403 and "not published" in response.json()["detail"]

    def test_resource_caps(self, api_for, alice, cluster, sleep_template):
        JobTemplate.objects.filter(pk=sleep_template.pk).update(max_gpus=1)
        response = api_for(alice).post(
            "/api/v1/jobs/",
            {"template": "sleep-echo", "cluster": "local", "params": {"gpus_per_node": 2}},
            format="json",
        )
        assert response.status_code == 400
        assert "at most 1 GPU" in response.json()["params"]["gpus_per_node"][0]

    def test_clusters_list_has_no_credential_field(self, api_for, alice, cluster):
        rows = api_for(alice).get("/api/v1/clusters/").json()["results"]
        assert [r["name"] for r in rows] == ["local"]
        assert set(rows[0]) == {"name", "title", "kind", "enabled", "partitions", "gpu_types"}

    def test_templates_list(self, api_for, alice, carol, cluster, sleep_template):
        assert [r["slug"] for r in api_for(alice).get("/api/v1/templates/").json()["results"]] == ["sleep-echo"]
        assert api_for(carol).get("/api/v1/templates/").json()["results"] == []

    def test_clone_copies_params_with_overrides(self, api_for, alice, make_job):
        source = make_job(alice, seconds=7, message="first")
        response = api_for(alice).post(f"/api/v1/jobs/{source.pk}/clone/", {"params": {"seconds": 9}}, format="json")
        assert response.status_code == 201
        clone = Job.objects.get(pk=response.json()["id"])
        assert clone.params["seconds"] == 9 and clone.params["message"] == "first" and clone.cloned_from == source

    def test_token_endpoint_and_schema(self, client, alice):
        response = client.post("/api/v1/token/", {"username": "alice", "password": "correct-horse-battery-staple"})
        token = response.json()["token"]
        assert client.get("/api/v1/jobs/", HTTP_AUTHORIZATION=f"Token {token}").status_code == 200
        assert client.post("/api/v1/token/", {"username": "alice", "password": "wrong"}).status_code == 400
        schema = client.get("/api/v1/schema/", HTTP_AUTHORIZATION=f"Token {token}")
        assert schema.status_code == 200 and b"/api/v1/jobs/{id}/log/" in schema.content


class TestQuota:
    def test_concurrent_job_quota(self, api_for, alice, cluster, sleep_template, course):
        course.max_concurrent_jobs = 2
        course.save()
        client = api_for(alice)
        codes = [
            client.post("/api/v1/jobs/", {"template": "sleep-echo", "cluster": "local"}, format="json").status_code
            for _ in range(3)
        ]
        assert codes == [201, 201, 403]
        Job.objects.filter(owner=alice).update(state="completed")
        assert (
            client.post("/api/v1/jobs/", {"template": "sleep-echo", "cluster": "local"}, format="json").status_code
            == 201
        )

    def test_gpu_quota_message_says_what_to_do(self, api_for, alice, cluster, sleep_template, course):
        course.max_gpus = 3
        course.save()
        client = api_for(alice)
        body = {"template": "sleep-echo", "cluster": "local", "params": {"gpus_per_node": 2}}
        assert client.post("/api/v1/jobs/", body, format="json").status_code == 201
        response = client.post("/api/v1/jobs/", body, format="json")
        assert response.status_code == 403
        assert "needs 2 GPU(s) and your unfinished jobs hold 2" in response.json()["detail"]
        assert "wait for a job to finish" in response.json()["detail"]

    def test_a_gpu_request_above_the_whole_limit_is_not_told_to_wait(
        self, api_for, alice, cluster, sleep_template, course
    ):
        course.max_gpus = 1
        course.save()
        body = {"template": "sleep-echo", "cluster": "local", "params": {"gpus_per_node": 2}}
        detail = api_for(alice).post("/api/v1/jobs/", body, format="json").json()["detail"]
        assert "Ask for 1 GPU(s) or fewer." in detail and "wait" not in detail

    def test_instructors_are_not_bound_by_student_quota(self, api_for, instructor, cluster, sleep_template, course):
        course.max_concurrent_jobs = 1
        course.save()
        client = api_for(instructor)
        for _ in range(3):
            assert (
                client.post("/api/v1/jobs/", {"template": "sleep-echo", "cluster": "local"}, format="json").status_code
                == 201
            )


def test_catalog_offers_only_templates_a_course_cluster_can_run(login, alice, cluster, sleep_template, course):
    k8s = JobTemplate.objects.create(
        name="Served on Kubernetes", slug="k8s-only", backend="kubernetes", body="", status=JobTemplate.Status.PUBLISHED
    )
    k8s.courses.add(course)
    page = login(alice).get(reverse("jobs:catalog")).content.decode()
    assert "Sleep and echo" in page and "Served on Kubernetes" not in page


def test_launch_form_refuses_numbers_in_other_scripts_and_with_spaces(login, alice, cluster, sleep_template, course):
    url = reverse("jobs:launch", args=[course.slug, sleep_template.slug])
    for value in ["٢", " 2 ", "1_0"]:
        data = {"cluster": cluster.pk, "param_seconds": value, "param_partition": "debug", "param_time_minutes": 2}
        page = login(alice).post(url, {**data, "param_gpus_per_node": 0, "param_exit_code": 0}).content.decode()
        assert "digits 0-9" in page, value
    assert not Job.objects.exists()
