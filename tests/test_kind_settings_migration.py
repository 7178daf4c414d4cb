"""A database made before the kinds owned their settings (the columns on Cluster and Course) is migrated, and every
value is found where its kind reads it; migrated back, the columns hold them again."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from clusters.backends.kinds.kubernetes.settings import cluster_settings as kubernetes_cluster
from clusters.backends.kinds.kubernetes.settings import course_settings as kubernetes_course
from clusters.backends.slurm_family.settings import cluster_settings as slurm_cluster

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("clusters", "0015_lab_sessions_on_any_kind"), ("courses", "0014_kueue_queue")]
AFTER = [("clusters", "0016_kind_settings"), ("courses", "0015_kind_settings")]

KUBERNETES = {
    "ca_certificate": "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----",
    "kube_context": "lab",
    "gpu_sharing_factor": 4,
    "prometheus_url": "http://prometheus.monitoring:9090",
    "has_mpi_operator": True,
    "has_metrics_api": True,
    "kube_addons": {"kueue": True, "kuberay": False},
    "kueue_cohort": "campus",
    "kueue_flavor": "a100",
}
COURSE = {
    "namespace_mode": "course",
    "max_cpus": 8,
    "max_memory_gb": 32,
    "max_pods": 5,
    "max_volumes": 2,
    "ingress_host": "lab.example.edu",
    "kueue_local_queue": "team-a",
    "kueue_preemption": "never",
    "kueue_borrowing_limit": 3,
    "kueue_lending_limit": 1,
}


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


@pytest.fixture
def before():
    apps = migrate(BEFORE)
    yield apps
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())  # the schema every other test expects


def test_every_kind_setting_is_carried_into_the_kind_s_settings_and_back(before):
    Cluster, Course = before.get_model("clusters", "Cluster"), before.get_model("courses", "Course")
    Cluster.objects.create(name="k8s", kind="kubernetes", api_url="https://k8s.example.edu:6443", **KUBERNETES)
    Cluster.objects.create(name="campus", kind="slurm", host="login.example.edu", has_accounting=True)
    Cluster.objects.create(name="rest", kind="slurm-rest", api_url="https://slurm.example.edu", has_accounting=False)
    Cluster.objects.create(name="plain", kind="slurm", host="login2.example.edu")  # accounting never checked
    Course.objects.create(slug="hpc", name="HPC", max_gpus=2, **COURSE)
    Course.objects.create(slug="plain", name="Plain")

    after = migrate(AFTER)
    Cluster, Course = after.get_model("clusters", "Cluster"), after.get_model("courses", "Course")
    k8s = Cluster.objects.get(name="k8s")
    assert k8s.kind_settings == KUBERNETES and k8s.api_url == "https://k8s.example.edu:6443"
    assert kubernetes_cluster(k8s).kube_addons == {"kueue": True, "kuberay": False}
    assert kubernetes_cluster(k8s).gpu_sharing_factor == 4 and kubernetes_cluster(k8s).kueue_flavor == "a100"
    assert Cluster.objects.get(name="campus").kind_settings == {"has_accounting": True}
    assert slurm_cluster(Cluster.objects.get(name="rest")).has_accounting is False
    assert slurm_cluster(Cluster.objects.get(name="plain")).has_accounting is None
    hpc = Course.objects.get(slug="hpc")
    assert hpc.kind_settings == {"kubernetes": COURSE} and hpc.max_gpus == 2
    assert kubernetes_course(hpc).kueue_borrowing_limit == 3 and kubernetes_course(hpc).namespace_mode == "course"
    plain = kubernetes_course(Course.objects.get(slug="plain"))
    assert (plain.namespace_mode, plain.max_cpus, plain.kueue_preemption) == ("student", 16, "mlbatch")

    # Both releases run while the upgrade rolls (docs/operations.md, expand then contract): this one inserts rows
    # without the old columns, the previous one without kind_settings; the database fills in either.
    from clusters.models import Cluster as Current

    Current.objects.create(name="new", kind="kubernetes", kind_settings={"kube_context": "lab"})
    before.get_model("clusters", "Cluster").objects.create(name="old", kind="slurm", host="login3.example.edu")
    assert Current.objects.get(name="old").kind_settings == {}
    Current.objects.filter(name__in=["new", "old"]).delete()

    again = migrate(BEFORE)
    Cluster, Course = again.get_model("clusters", "Cluster"), again.get_model("courses", "Course")
    k8s = Cluster.objects.get(name="k8s")
    assert {name: getattr(k8s, name) for name in KUBERNETES} == KUBERNETES
    assert Cluster.objects.get(name="campus").has_accounting is True
    assert Cluster.objects.get(name="plain").has_accounting is None
    assert {name: getattr(Course.objects.get(slug="hpc"), name) for name in COURSE} == COURSE
