"""Launching the sleep-echo template and reading a whole log through the API, as the SLURM kinds' tests do."""

from jobs.models import Job


def launch(api_for, user, **params) -> Job:
    response = api_for(user).post(
        "/api/v1/jobs/", {"template": "sleep-echo", "cluster": "local", "params": params}, format="json"
    )
    assert response.status_code == 201, response.content
    return Job.objects.get(pk=response.json()["id"])


def read_whole_log(api_for, user, job) -> str:
    data, offset = "", 0
    while True:
        chunk = api_for(user).get(f"/api/v1/jobs/{job.pk}/log/?offset={offset}").json()
        data += chunk["data"]
        if chunk["eof"]:
            return data
        offset = chunk["offset"]
