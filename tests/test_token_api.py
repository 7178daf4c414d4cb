"""DELETE /api/v1/token/: a user revokes their own API token (`gpulab logout`), and only their own."""

from django.test import Client
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient


def test_a_student_revokes_her_token_and_it_no_longer_works(api_for, alice):
    client = api_for(alice)
    assert client.get("/api/v1/jobs/").status_code == 200
    response = client.delete("/api/v1/token/")
    assert response.status_code == 204
    assert not Token.objects.filter(user=alice).exists()
    refused = client.get("/api/v1/jobs/")
    assert refused.status_code == 401 and refused.json()["detail"] == "Invalid token."


def test_revoking_leaves_another_student_s_token_alone(api_for, alice, bob):
    bob_client = api_for(bob)
    assert api_for(alice).delete("/api/v1/token/").status_code == 204
    assert bob_client.get("/api/v1/jobs/").status_code == 200


def test_anonymous_cannot_revoke_and_a_wrong_token_is_refused(alice):
    Token.objects.create(user=alice)
    assert APIClient().delete("/api/v1/token/").status_code == 401
    forged = APIClient()
    forged.credentials(HTTP_AUTHORIZATION="Token " + "0" * 40)
    assert forged.delete("/api/v1/token/").status_code == 401
    assert Token.objects.filter(user=alice).exists()


def test_a_session_needs_its_csrf_token_to_revoke(alice):
    Token.objects.create(user=alice)
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(alice)
    response = browser.delete("/api/v1/token/")
    assert response.status_code == 403 and "CSRF" in response.json()["detail"]
    assert Token.objects.filter(user=alice).exists()


def test_signing_in_again_after_revoking_gives_a_new_token(api_for, alice, client):
    old = Token.objects.get_or_create(user=alice)[0].key
    assert api_for(alice).delete("/api/v1/token/").status_code == 204
    response = client.post("/api/v1/token/", {"username": "alice", "password": "correct-horse-battery-staple"})
    assert response.status_code == 200 and response.json()["token"] != old


def test_the_schema_documents_revoking_without_a_throttle(api_for, alice):
    schema = api_for(alice).get("/api/v1/schema/?format=json").json()
    revoke = schema["paths"]["/api/v1/token/"]["delete"]
    assert {"204", "401", "403"} <= set(revoke["responses"]) and "429" not in revoke["responses"]
    assert "429" in schema["paths"]["/api/v1/token/"]["post"]["responses"]
