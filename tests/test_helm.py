"""The Helm chart (deploy/helm/gpulab-portal): rendered by Helm's own engine and every object validated.

`helm template` is used where the binary is installed; otherwise the chart is rendered by the same Go engine
through Helm's SDK (the helm-python-sdk wheel bundles it), with the same values and release options.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

CHART = Path(__file__).resolve().parents[1] / "deploy/helm/gpulab-portal"
KUBERNETES_VERSIONS = ("1.30.0", "1.34.0")  # the oldest the chart's kubeVersion admits that we check, the newest
SECRETS = {
    "secretKey": "s" * 25 + "ecret-0123456789-abcdefghijklmnop",
    "credentialKeys": "ZGV2LW9ubHktaW5zZWN1cmUtY3JlZGVudGlhbC1rZXk=",
    "databaseUrl": "postgres://gpulab:pw@db.example.edu:5432/gpulab?sslmode=require",
    "redisUrl": "redis://:pw@redis.example.edu:6379/0",
}


class RenderError(Exception):
    pass


def render(values: dict | None = None) -> list[dict]:
    values = {"secrets": SECRETS, **(values or {})}
    helm = shutil.which("helm")
    if helm:
        result = subprocess.run(
            [helm, "template", "gpulab", str(CHART), "--namespace", "lab", "--values", "-"],
            input=yaml.safe_dump(values),
            capture_output=True,
            text=True,
        )
        if result.returncode:
            raise RenderError(result.stderr)
        texts = [result.stdout]
    else:
        import helm_python

        try:
            with helm_python.Chart.load(CHART) as chart:
                rendered = chart.render(values, name="gpulab", namespace="lab", is_install=True)
        except (helm_python.HelmRenderError, helm_python.HelmValuesError) as exc:
            raise RenderError(str(exc)) from exc
        texts = [text for name, text in sorted(rendered.items()) if name.endswith(".yaml")]
    return [doc for text in texts for doc in yaml.safe_load_all(text) if doc]


def by_kind(objects: list[dict], kind: str) -> dict[str, dict]:
    return {o["metadata"]["name"]: o for o in objects if o["kind"] == kind}


@pytest.fixture(scope="module")
def objects() -> list[dict]:
    return render()


def pod_specs(objects) -> dict[str, dict]:
    specs = {}
    for obj in objects:
        if obj["kind"] in ("Deployment", "Job"):
            specs[obj["metadata"]["name"]] = obj["spec"]["template"]["spec"]
    return specs


def test_every_object_validates_against_the_kubernetes_schemas(objects):
    for version in KUBERNETES_VERSIONS:
        for obj in objects:
            kubernetes_validate.validate(obj, version, strict=True)


def test_the_chart_has_every_part_of_the_portal(objects):
    deployments = by_kind(objects, "Deployment")
    assert set(deployments) == {f"gpulab-gpulab-portal-{c}" for c in ("web", "worker", "beat", "collector-all")}
    assert set(by_kind(objects, "HorizontalPodAutoscaler")) == {"gpulab-gpulab-portal-web"}
    assert set(by_kind(objects, "PodDisruptionBudget")) == {"gpulab-gpulab-portal-web", "gpulab-gpulab-portal-worker"}
    for kind in ("Service", "Ingress", "ConfigMap", "Secret", "ServiceAccount", "Job"):
        assert by_kind(objects, kind), kind
    beat = deployments["gpulab-gpulab-portal-beat"]["spec"]
    assert beat["replicas"] == 1 and beat["strategy"]["type"] == "Recreate"  # never two beats, even mid-rollout
    assert "replicas" not in deployments["gpulab-gpulab-portal-web"]["spec"]  # the HPA owns it


def test_migrations_run_as_a_hook_before_install_and_upgrade(objects):
    job = by_kind(objects, "Job")["gpulab-gpulab-portal-migrate"]
    assert job["metadata"]["annotations"]["helm.sh/hook"] == "pre-install,pre-upgrade"
    assert job["spec"]["template"]["spec"]["containers"][0]["args"] == ["migrate"]
    # What the hook reads exists before it.
    for kind in ("ConfigMap", "Secret"):
        (obj,) = by_kind(objects, kind).values()
        assert int(obj["metadata"]["annotations"]["helm.sh/hook-weight"]) < 0


def test_pods_run_as_non_root_with_requests_and_secrets_only_as_files(objects):
    for name, spec in pod_specs(objects).items():
        assert spec["securityContext"]["runAsNonRoot"] is True and spec["securityContext"]["runAsUser"] != 0, name
        assert spec["automountServiceAccountToken"] is False, name
        for container in spec["containers"]:
            context = container["securityContext"]
            assert context["allowPrivilegeEscalation"] is False and context["readOnlyRootFilesystem"] is True, name
            assert context["capabilities"]["drop"] == ["ALL"], name
            assert {"cpu", "memory"} <= set(container["resources"]["requests"]), name
            env = {e["name"]: e.get("value") for e in container["env"]}
            assert env["SECRET_KEY_FILE"] == "/run/gpulab-secrets/secret_key" and "SECRET_KEY" not in env, name
    config = next(iter(by_kind(objects, "ConfigMap").values()))["data"]
    rendered_config = yaml.safe_dump(config)
    for secret in SECRETS.values():
        assert secret not in rendered_config
    assert config["HTTPS"] == "1" and config["ALLOWED_HOSTS"] == "gpulab.example.edu"
    assert config["CSRF_TRUSTED_ORIGINS"] == "https://gpulab.example.edu" and config["LOG_FORMAT"] == "json"


def test_web_probes_and_websocket_friendly_ingress(objects):
    web = by_kind(objects, "Deployment")["gpulab-gpulab-portal-web"]["spec"]["template"]["spec"]["containers"][0]
    assert (
        web["livenessProbe"]["httpGet"]["path"] == "/healthz" and web["readinessProbe"]["httpGet"]["path"] == "/readyz"
    )
    env = {e["name"]: e.get("value") for e in web["env"]}
    assert env["WEB_CONCURRENCY"] == "2" and env["DATABASE_POOL_SIZE"] == "10"
    ingress = next(iter(by_kind(objects, "Ingress").values()))
    assert int(ingress["metadata"]["annotations"]["nginx.ingress.kubernetes.io/proxy-read-timeout"]) >= 3600
    assert ingress["spec"]["tls"][0]["hosts"] == ["gpulab.example.edu"]


def test_collector_shards_and_an_existing_secret(objects):
    objects = render(
        {
            "existingSecret": "gpulab-from-vault",
            "secrets": {},
            "collector": {
                "shards": [
                    {"name": "campus", "clusters": ["campus-a", "campus-b"]},
                    {"name": "k8s", "clusters": ["k8s"]},
                ]
            },
            "web": {"autoscaling": {"enabled": False}, "replicas": 3},
        }
    )
    assert not by_kind(objects, "Secret")
    deployments = by_kind(objects, "Deployment")
    args = {}
    for name, deployment in deployments.items():
        spec = deployment["spec"]["template"]["spec"]
        assert spec["volumes"][0]["secret"]["secretName"] == "gpulab-from-vault"
        env = {e["name"]: e.get("value") for e in spec["containers"][0]["env"]}
        args[name] = env.get("COLLECTOR_ARGS")
    assert args["gpulab-gpulab-portal-collector-campus"] == "--cluster campus-a --cluster campus-b"
    assert args["gpulab-gpulab-portal-collector-k8s"] == "--cluster k8s"
    assert deployments["gpulab-gpulab-portal-web"]["spec"]["replicas"] == 3 and not by_kind(
        objects, "HorizontalPodAutoscaler"
    )
    for obj in objects:
        kubernetes_validate.validate(obj, KUBERNETES_VERSIONS[-1], strict=True)


def test_missing_secrets_and_bad_values_fail_with_a_message_that_says_what_to_set():
    with pytest.raises(RenderError, match=r"secrets\.databaseUrl is required"):
        render({"secrets": {**SECRETS, "databaseUrl": ""}})
    with pytest.raises(RenderError, match="replicas"):
        render({"worker": {"replicas": "two"}})
    with pytest.raises(RenderError, match="databaseUrl"):
        render({"secrets": {**SECRETS, "databaseUrl": "mysql://x"}})


def test_helm_lint_is_clean():
    values = {"secrets": SECRETS}
    helm = shutil.which("helm")
    if helm:
        result = subprocess.run(
            [helm, "lint", "--strict", str(CHART), "--values", "-"],
            input=yaml.safe_dump(values),
            capture_output=True,
            text=True,
        )
        assert result.returncode == 0, result.stdout + result.stderr
        return
    import helm_python

    report = helm_python.lint(CHART, values, strict=True)
    assert report["errors"] == [] and report["total_charts_linted"] == 1
    assert [m for m in report["messages"] if m["severity"] > 1] == []  # warnings and errors; info only


def test_campus_sign_in_secrets_are_files_only_when_asked_for():
    def web_env(objects):
        web = by_kind(objects, "Deployment")["gpulab-gpulab-portal-web"]["spec"]["template"]["spec"]["containers"][0]
        return {e["name"]: e.get("value") for e in web["env"]}

    assert "OIDC_CLIENT_SECRET_FILE" not in web_env(render())  # an existing Secret without the keys still works
    sign_on = {
        "signOnSecrets": True,
        "secrets": {**SECRETS, "oidcClientSecret": "oidc-client-secret-xyz", "ldapBindPassword": "ldap-bind-pw-xyz"},
        "config": {"OIDC_ISSUER": "https://idp.example.edu", "LDAP_SERVER_URI": "ldaps://ldap.example.edu"},
    }
    objects = render(sign_on)
    env = web_env(objects)
    assert env["OIDC_CLIENT_SECRET_FILE"] == "/run/gpulab-secrets/oidc_client_secret"
    assert env["LDAP_BIND_PASSWORD_FILE"] == "/run/gpulab-secrets/ldap_bind_password"
    secret = next(iter(by_kind(objects, "Secret").values()))["stringData"]
    assert secret["oidc_client_secret"] == "oidc-client-secret-xyz"
    config = yaml.safe_dump(next(iter(by_kind(objects, "ConfigMap").values()))["data"])
    assert "oidc-client-secret-xyz" not in config and "ldap-bind-pw-xyz" not in config
    assert "https://idp.example.edu" in config
