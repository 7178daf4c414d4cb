"""Hostile API input answers 4xx with a message, never 500; the schema and docs need a login and list the 4xx."""

from __future__ import annotations

import json

import pytest

from jobs.models import Job
from portal.api_limits import MAX_JSON_DEPTH, MAX_PAGE_SIZE, json_depth

pytestmark = pytest.mark.django_db

HUGE = "9223372036854775808"  # one past PostgreSQL's bigint


@pytest.mark.parametrize("resource", ["jobs", "templates", "clusters"])
def test_a_limit_past_bigint_gives_a_capped_page_not_a_500(api_for, alice, make_job, resource):
    make_job(alice)
    client = api_for(alice)
    response = client.get(f"/api/v1/{resource}/?limit={HUGE}")
    assert response.status_code == 200, response.content
    assert len(response.json()["results"]) == 1
    assert client.get(f"/api/v1/{resource}/?limit=2&offset={HUGE}").json()["results"] == []


def test_pages_hold_at_most_the_maximum_whatever_the_limit_asked(api_for, alice, make_job):
    job = make_job(alice)
    copy = {f.attname: getattr(job, f.attname) for f in Job._meta.concrete_fields if f.name != "id"}
    Job.objects.bulk_create([Job(**copy) for _ in range(MAX_PAGE_SIZE + 5)])
    body = api_for(alice).get(f"/api/v1/jobs/?limit={HUGE}").json()
    assert body["count"] == MAX_PAGE_SIZE + 6 and len(body["results"]) == MAX_PAGE_SIZE
    assert f"limit={MAX_PAGE_SIZE}" in body["next"]


def test_deeply_nested_params_are_refused_with_a_message(api_for, alice, cluster, sleep_template):
    body = '{"template": "sleep-echo", "cluster": "local", "params": {"seconds": ' + "[" * 5000 + "]" * 5000 + "}}"
    response = api_for(alice).generic("POST", "/api/v1/jobs/", body, content_type="application/json")
    assert response.status_code == 400
    assert f"deeper than {MAX_JSON_DEPTH} levels" in response.json()["detail"]
    assert not Job.objects.exists()


def test_brackets_inside_strings_do_not_count_as_nesting():
    assert json_depth(b'{"a": "[[[[{{{{\\"[[["}') == 1
    assert json_depth(b'[[1], {"b": [2]}]') == 3


def test_a_body_past_the_upload_limit_is_refused_before_parsing(api_for, alice, cluster, sleep_template, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 4096
    body = json.dumps({"template": "sleep-echo", "cluster": "local", "params": {"message": "x" * 5000}})
    response = api_for(alice).generic("POST", "/api/v1/jobs/", body, content_type="application/json")
    assert response.status_code == 413 and "larger than 4 KiB" in response.json()["detail"]


def test_the_api_refuses_numbers_in_other_scripts_and_with_spaces(api_for, alice, cluster, sleep_template):
    client = api_for(alice)
    for value in ["٢", " 2 ", "\uff12", "1_0"]:  # Arabic-Indic, spaces, fullwidth, underscore
        response = client.post(
            "/api/v1/jobs/",
            {"template": "sleep-echo", "cluster": "local", "params": {"seconds": value}},
            format="json",
        )
        assert response.status_code == 400, value
        assert "digits 0-9" in response.json()["params"]["seconds"][0]
    assert not Job.objects.exists()


class TestSchemaAndDocs:
    def test_anonymous_gets_neither_the_schema_nor_the_docs(self, client):
        assert client.get("/api/v1/schema/").status_code in {401, 403}
        docs = client.get("/api/v1/docs/")
        assert docs.status_code == 302 and docs.url == "/login/?next=/api/v1/docs/"

    def test_a_student_with_a_token_or_a_session_gets_both(self, api_for, login, alice):
        assert api_for(alice).get("/api/v1/schema/?format=json").status_code == 200
        assert login(alice).get("/api/v1/docs/").status_code == 200

    def test_every_operation_documents_its_refusals(self, api_for, alice):
        schema = api_for(alice).get("/api/v1/schema/?format=json").json()
        for path, operations in schema["paths"].items():
            for method, operation in operations.items():
                codes = set(operation["responses"])
                where = f"{method.upper()} {path}"
                if not path.startswith("/api/v1/token/"):  # signing in (password or code) needs no credentials
                    assert {"401", "403"} <= codes, where
                if "{" in path:
                    assert "404" in codes, where
                if method == "post":
                    assert {"400", "413"} <= codes, where
                error = operation["responses"].get("401", {}).get("content", {}).get("application/json", {})
                assert error.get("schema", {}).get("$ref", "#/components/schemas/Error").endswith("/Error"), where
        assert "429" in schema["paths"]["/api/v1/token/"]["post"]["responses"]
        assert {"409", "404"} <= set(schema["paths"]["/api/v1/jobs/{id}/cancel/"]["post"]["responses"])
        assert schema["components"]["schemas"]["Error"]["required"] == ["detail"]


@pytest.mark.parametrize(
    "url",
    ["/api/v1/templates/%00/", "/api/v1/clusters/a%00b/", "/api/v1/jobs/?course=%00", "/api/v1/jobs/?mine=1&x=%00"],
)
def test_a_nul_in_the_address_is_a_400_with_a_message(api_for, alice, cluster, url):
    response = api_for(alice).get(url)
    assert response.status_code == 400 and "NUL character" in response.json()["detail"]


def test_a_nul_in_a_page_address_is_a_400(login, alice, course):
    response = login(alice).get("/courses/h%00pc/")
    assert response.status_code == 400 and b"NUL character" in response.content


@pytest.mark.parametrize(
    ("query", "name"),
    [("limit=abc", "limit"), ("limit=0", "limit"), ("offset=-1", "offset"), ("limit=%D9%A2", "limit")],
)
def test_a_malformed_page_is_refused_with_a_message(api_for, alice, query, name):
    response = api_for(alice).get(f"/api/v1/jobs/?{query}")
    assert response.status_code == 400 and "digits 0-9" in response.json()[name][0]


def test_an_id_that_cannot_exist_is_the_apis_json_404(api_for, alice):
    for url in ["/api/v1/jobs/0.5/", "/api/v1/jobs/0.5/log/", "/api/v1/templates/a.b/", "/api/v1/clusters/x.y/"]:
        response = api_for(alice).get(url)
        assert response.status_code == 404 and response["Content-Type"] == "application/json", url


def test_the_api_reads_json_only_and_the_token_endpoint_also_forms(api_for, alice, client):
    response = api_for(alice).post("/api/v1/jobs/", {"template": "x", "cluster": "y"})  # multipart
    assert response.status_code == 415
    urlencoded = "application/x-www-form-urlencoded"
    form = client.post("/api/v1/token/", "username=alice&password=wrong", content_type=urlencoded)
    multipart = client.post("/api/v1/token/", {"username": "alice", "password": "wrong"})
    assert form.status_code == multipart.status_code == 400 and "non_field_errors" in form.json()
    deep = '{"username": ' + "[" * 5000 + "]" * 5000 + "}"
    nested = client.generic("POST", "/api/v1/token/", deep, content_type="application/json")
    assert nested.status_code == 400 and "deeper than" in nested.json()["detail"]


def test_list_filters_refuse_what_they_do_not_know(api_for, alice):
    response = api_for(alice).get("/api/v1/jobs/?mine=AAA")
    assert response.status_code == 400 and "One of 1, true, 0, false" in response.json()["mine"][0]
    assert api_for(alice).get("/api/v1/jobs/?mine=0").status_code == 200
    assert "Unknown state" in api_for(alice).get("/api/v1/jobs/?state=").json()["state"][0]


def test_a_course_that_is_not_yours_is_a_field_error(api_for, alice, cluster, sleep_template):
    body = {"template": "sleep-echo", "cluster": "local", "course": "ml", "params": {}}
    response = api_for(alice).post("/api/v1/jobs/", body, format="json")
    assert response.status_code == 400 and "not in a course" in response.json()["course"][0]


def test_jobs_are_found_by_the_first_characters_of_their_id_and_only_the_callers(api_for, alice, bob, make_job):
    """`?id_prefix=` (what `gpulab status 3f2a9c1e` asks): the first characters of the id, dashes or not, among the
    jobs the caller may see; anything but hex digits is a 400 in words."""
    mine, theirs = make_job(alice), make_job(bob)
    client = api_for(alice)
    for prefix in (str(mine.pk)[:8], str(mine.pk)[:13], str(mine.pk)[:13].replace("-", "").upper()):
        found = client.get("/api/v1/jobs/", {"id_prefix": prefix}).json()["results"]
        assert [job["id"] for job in found] == [str(mine.pk)], prefix
    assert client.get("/api/v1/jobs/", {"id_prefix": str(theirs.pk)[:8]}).json()["results"] == []
    refused = client.get("/api/v1/jobs/", {"id_prefix": "3f' OR 1=1"})
    assert refused.status_code == 400 and "0-9 and a-f" in refused.json()["id_prefix"][0]
