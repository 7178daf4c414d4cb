"""The course's roster and class dashboard over the API (`gpulab course roster|dashboard`): the pages' access rules
and the pages' figures."""

import pytest

from clusters.identity import set_cluster_username


@pytest.fixture
def people(alice, bob, instructor, ta, other_instructor, carol):
    return {"alice": alice, "bob": bob, "instructor": instructor, "ta": ta, "other": other_instructor, "carol": carol}


@pytest.mark.parametrize(
    ("who", "roster", "dashboard"),
    [("instructor", 200, 200), ("ta", 403, 200), ("alice", 404, 404), ("other", 404, 404), ("carol", 404, 404)],
)
def test_who_gets_the_roster_and_the_dashboard_of_the_course(api_for, people, course, who, roster, dashboard):
    client = api_for(people[who])
    assert client.get(f"/api/v1/courses/{course.slug}/roster/").status_code == roster
    assert client.get(f"/api/v1/courses/{course.slug}/dashboard/").status_code == dashboard
    if roster == 403:  # a TA is told why, as on the page
        assert "roster" in client.get(f"/api/v1/courses/{course.slug}/roster/").json()["detail"]


def test_the_roster_lists_each_person_with_role_sign_in_and_cluster_user(api_for, people, course, instructor):
    set_cluster_username(people["alice"], "s1234")
    people["bob"].last_login = None
    people["bob"].save()
    rows = {row["username"]: row for row in api_for(instructor).get(f"/api/v1/courses/{course.slug}/roster/").json()}
    assert sorted(rows) == ["alice", "bob", "ines", "tara"]  # the other course's people are not in it
    assert rows["alice"]["role"] == "student" and rows["alice"]["cluster_username"] == "s1234"
    assert rows["tara"]["role"] == "ta" and rows["bob"]["signed_in"] is False and rows["bob"]["cluster_username"] == ""


def test_the_dashboard_counts_each_student_s_jobs_as_the_page_does(api_for, people, course, instructor, make_job):
    make_job(people["alice"], seconds=5)
    make_job(people["alice"], seconds=6)
    make_job(people["bob"], seconds=7)
    answer = api_for(instructor).get(f"/api/v1/courses/{course.slug}/dashboard/").json()
    assert answer["course"] == course.slug and answer["states"]["queued"] == 3 and answer["states"]["running"] == 0
    rows = {row["username"]: row for row in answer["students"]}
    assert sorted(rows) == ["alice", "bob"]  # students only: no instructor, TA or other course
    assert rows["alice"]["jobs"] == 2 and rows["alice"]["waiting"] == 2 and rows["bob"]["jobs"] == 1
    assert rows["alice"]["last_state"] == "queued" and rows["alice"]["mean_gpu_util"] is None
