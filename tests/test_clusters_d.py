"""Clusters from clusters.d YAML: secrets by reference only."""

import pytest
from django.core.management import CommandError, call_command

from clusters.models import Cluster

pytestmark = pytest.mark.django_db

GOOD = """
v2:
  metadata: {title: Campus GPU}
  login:
    host: 127.0.0.1
    port: 2222
    host_key: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKkSOjxxdLDyrd3Dp0Zz0UhCwDcJsGjuD5iKkk5w8Okt"
  job: {adapter: slurm, partitions: [debug, gpu], gpu_types: [demo]}
  gpulab:
    lab_dir: ~/lab
    preamble: "module load cuda"
    courses: [hpc]
    service_account: {username: labsvc, password_env: CAMPUS_PASSWORD}
"""


def test_sync_creates_cluster_account_and_course_link(tmp_path, course, monkeypatch):
    monkeypatch.setenv("CAMPUS_PASSWORD", "from-the-environment")
    (tmp_path / "campus.yml").write_text(GOOD)
    call_command("sync_clusters", str(tmp_path))
    cluster = Cluster.objects.get(name="campus")
    assert cluster.title == "Campus GPU" and cluster.partitions == ["debug", "gpu"] and cluster.port == 2222
    assert cluster.host_key.startswith("ssh-ed25519 AAAA") and cluster.host_key_pinned_at
    assert cluster.service_account().secret() == "from-the-environment"
    assert list(course.clusters.all()) == [cluster]
    call_command("sync_clusters", str(tmp_path))  # idempotent
    assert Cluster.objects.count() == 1 and cluster.credential_events.filter(action="set").count() == 1


def test_inline_secret_is_refused(tmp_path, course):
    (tmp_path / "campus.yml").write_text(GOOD.replace("password_env: CAMPUS_PASSWORD", "password: hunter2"))
    with pytest.raises(CommandError):
        call_command("sync_clusters", str(tmp_path))
    assert not Cluster.objects.exists()


def test_secret_file_reference(tmp_path, course):
    secret = tmp_path / "secret"
    secret.write_text("from-a-file")
    (tmp_path / "campus.yml").write_text(GOOD.replace("password_env: CAMPUS_PASSWORD", f"password_file: {secret}"))
    call_command("sync_clusters", str(tmp_path))
    assert Cluster.objects.get().service_account().secret() == "from-a-file"


def test_errors_name_the_file(tmp_path, capsys):
    (tmp_path / "bad.yml").write_text("v2: {login: {}}")
    with pytest.raises(CommandError):
        call_command("sync_clusters", str(tmp_path))
    assert "bad.yml: login.host is required" in capsys.readouterr().err


REST = """
v2:
  metadata: {title: Campus GPU (REST)}
  job: {adapter: slurm-rest, rest_url: "http://127.0.0.1:6820", partitions: [debug]}
  gpulab:
    courses: [hpc]
    service_account: {username: labrest, token_env: CAMPUS_JWT}
"""


def test_a_rest_cluster_needs_no_login_node_and_takes_its_token_by_reference(tmp_path, course, monkeypatch):
    import base64

    claims = base64.urlsafe_b64encode(b'{"exp": 4102444800, "sun": "root"}').rstrip(b"=").decode()
    monkeypatch.setenv("CAMPUS_JWT", f"eyJhbGciOiJIUzI1NiJ9.{claims}.c2ln")
    (tmp_path / "campus-rest.yml").write_text(REST)
    call_command("sync_clusters", str(tmp_path))
    cluster = Cluster.objects.get(name="campus-rest")
    assert cluster.kind == "slurm-rest" and cluster.api_url == "http://127.0.0.1:6820" and cluster.host == ""
    account = cluster.service_account()
    assert account.api_token().endswith(".c2ln") and account.api_token_expires_at.year == 2100
    call_command("sync_clusters", str(tmp_path))  # idempotent: the same token is no new credential event
    assert cluster.credential_events.count() == 1


def test_a_rest_cluster_without_its_url_or_with_an_inline_token_is_refused(tmp_path, course, capsys):
    (tmp_path / "a.yml").write_text(REST.replace('rest_url: "http://127.0.0.1:6820", ', ""))
    (tmp_path / "b.yml").write_text(REST.replace("token_env: CAMPUS_JWT", "api_token: eyJ.x.y"))
    with pytest.raises(CommandError):
        call_command("sync_clusters", str(tmp_path))
    err = capsys.readouterr().err
    assert "a.yml: job.rest_url" in err and "b.yml service_account: `api_token` is inline" in err
    assert not Cluster.objects.exists()


def test_run_as_is_read_and_only_the_kinds_modes_are_taken(tmp_path, course, monkeypatch):
    from clusters.clusters_d import ClusterFileError, parse_file

    monkeypatch.setenv("CAMPUS_PASSWORD", "x")
    path = tmp_path / "campus.yml"
    path.write_text(GOOD.replace("lab_dir: ~/lab", "lab_dir: ~/lab\n    run_as: sudo"))
    assert parse_file(path)["fields"]["run_as"] == "sudo"
    path.write_text(GOOD.replace("lab_dir: ~/lab", "lab_dir: ~/lab\n    run_as: rest-user"))
    with pytest.raises(ClusterFileError, match="run_as must be one of service, sudo, own-account"):
        parse_file(path)
    path.write_text(GOOD)
    assert parse_file(path)["fields"]["run_as"] == "sudo"  # by default each student's own user


def test_the_shared_mode_needs_a_shared_user_other_than_the_service_account(tmp_path, course, monkeypatch):
    from clusters.clusters_d import ClusterFileError, parse_file

    monkeypatch.setenv("CAMPUS_PASSWORD", "x")
    path = tmp_path / "campus.yml"
    path.write_text(GOOD.replace("lab_dir: ~/lab", "lab_dir: ~/lab\n    run_as: service"))
    with pytest.raises(ClusterFileError, match=r"gpulab\.shared_user must name the unprivileged cluster user"):
        parse_file(path)
    path.write_text(GOOD.replace("lab_dir: ~/lab", "lab_dir: ~/lab\n    run_as: service\n    shared_user: labsvc"))
    with pytest.raises(ClusterFileError, match="cannot be the service account"):
        parse_file(path)
    path.write_text(GOOD.replace("lab_dir: ~/lab", "lab_dir: ~/lab\n    run_as: service\n    shared_user: labshared"))
    fields = parse_file(path)["fields"]
    assert (fields["run_as"], fields["shared_user"]) == ("service", "labshared")


KUBERNETES = """
v2:
  metadata: {title: Emulated Kubernetes, emulated: true}
  job: {adapter: kubernetes, context: lab}
  gpulab:
    courses: [hpc]
    service_account: {username: gpulab-portal, kubeconfig_file: KUBECONFIG}
"""
KUBECONFIG = """
apiVersion: v1
kind: Config
clusters: [{name: lab-cluster, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: portal, user: {token: t0ken}}]
contexts: [{name: lab, context: {cluster: lab-cluster, user: portal}}]
current-context: lab
"""


def test_a_kubernetes_cluster_takes_its_kubeconfig_by_reference_and_says_it_is_emulated(tmp_path, course):
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG)
    (tmp_path / "k8s.yml").write_text(KUBERNETES.replace("KUBECONFIG", str(kubeconfig)))
    call_command("sync_clusters", str(tmp_path))
    cluster = Cluster.objects.get(name="k8s")
    assert cluster.kind == "kubernetes" and cluster.kind_settings["kube_context"] == "lab" and cluster.emulated
    account = cluster.service_account()
    assert account.auth_method == "kubeconfig" and account.secret() == KUBECONFIG
    assert list(course.clusters.all()) == [cluster]
    assert str(cluster) == cluster.display_name == "Emulated Kubernetes"
    cluster.title = "Local Kubernetes"
    assert cluster.display_name == "Local Kubernetes (emulated)"


def test_a_kubeconfig_without_the_named_context_is_refused(tmp_path, course, capsys):
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG)
    text = KUBERNETES.replace("KUBECONFIG", str(kubeconfig)).replace("context: lab", "context: prod")
    (tmp_path / "k8s.yml").write_text(text)
    with pytest.raises(CommandError):
        call_command("sync_clusters", str(tmp_path))
    assert "k8s.yml: the kubeconfig has no context prod; it has lab." in capsys.readouterr().err
    assert not Cluster.objects.exists()
