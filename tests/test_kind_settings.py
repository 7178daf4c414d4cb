"""Settings a kind owns (clusters/kind_settings.py), kept as JSON on the shared rows: validated as the kind declares,
read typed with defaults, typed by admins on the cluster's and course's pages and in clusters.d files, detected by
Test connection and merged into the row without losing what an admin typed."""

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command

from clusters import services
from clusters.backends.base import ConnectionReport
from clusters.backends.kinds.kubernetes.settings import (
    KubernetesClusterSettings,
    KubernetesCourseSettings,
    cluster_settings,
    course_settings,
)
from clusters.models import Cluster
from courses.models import Course

from .test_clusters_d import KUBECONFIG, KUBERNETES

pytestmark = pytest.mark.django_db


def test_a_kind_s_settings_are_validated_as_it_declares_them():
    assert KubernetesClusterSettings.clean({"gpu_sharing_factor": "4", "kube_context": " lab "}) == {
        "gpu_sharing_factor": 4,
        "kube_context": "lab",
    }
    with pytest.raises(ValidationError) as refused:
        KubernetesClusterSettings.clean({"gpu_sharing_factor": 0, "prometheus_url": "not a url", "colour": "red"})
    said = refused.value.message_dict
    assert said["gpu_sharing_factor"] == ["Ensure this value is greater than or equal to 1."]
    assert said["prometheus_url"] == ["Enter a valid URL."]
    assert said["colour"] == ["This kind has no setting colour."]


def test_a_row_reads_its_kind_s_settings_typed_each_missing_one_at_its_default():
    cluster = Cluster(name="k", kind="kubernetes", kind_settings={"kueue_cohort": "lab", "retired_setting": 1})
    read = cluster_settings(cluster)
    assert (read.kueue_cohort, read.kueue_flavor, read.gpu_sharing_factor, read.kube_addons) == (
        "lab",
        "default-flavor",
        1,
        {},
    )
    assert read.describe("kube_addons") == "not checked yet: run Test connection"
    course = Course(slug="c", name="C", kind_settings={"kubernetes": {"max_pods": 3}, "slurm": {"anything": 1}})
    assert (course_settings(course).max_pods, course_settings(course).max_cpus) == (3, 16)
    assert cluster.gpu_share == 1 and not cluster.shares_gpus
    assert Cluster(kind="kubernetes", kind_settings={"gpu_sharing_factor": 4}).gpu_share == 4


def test_test_connection_s_facts_join_what_the_admin_typed():
    cluster = Cluster.objects.create(name="k", kind="kubernetes", kind_settings={"kube_context": "lab"})
    report = ConnectionReport(
        ok=True, facts={"server_version": "v1.34.1", "has_mpi_operator": True, "kube_addons": {"kueue": True}}
    )
    services.save_connection_facts(cluster, report)
    stored = Cluster.objects.get(pk=cluster.pk)
    assert stored.server_version == "v1.34.1"
    assert stored.kind_settings == {"kube_context": "lab", "has_mpi_operator": True, "kube_addons": {"kueue": True}}
    assert cluster.kind_settings == stored.kind_settings  # the caller's row too


def test_a_cluster_file_s_settings_replace_the_typed_ones_and_keep_what_test_connection_found(tmp_path, course):
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG)
    (tmp_path / "k8s.yml").write_text(KUBERNETES.replace("KUBECONFIG", str(kubeconfig)))
    call_command("sync_clusters", str(tmp_path))
    cluster = Cluster.objects.get(name="k8s")
    services.save_connection_facts(cluster, ConnectionReport(ok=True, facts={"has_metrics_api": True}))
    Cluster.objects.filter(pk=cluster.pk).update(kind_settings={**cluster.kind_settings, "kueue_cohort": "by-hand"})
    (tmp_path / "k8s.yml").write_text(
        KUBERNETES.replace("KUBECONFIG", str(kubeconfig)).replace("context: lab", "context: lab, gpu_sharing_factor: 2")
    )
    call_command("sync_clusters", str(tmp_path))
    assert Cluster.objects.get(name="k8s").kind_settings == {
        "kube_context": "lab",
        "gpu_sharing_factor": 2,
        "has_metrics_api": True,
    }


def test_the_cluster_page_draws_the_kind_s_settings_and_shows_detected_ones_in_words(login, admin_user):
    cluster = Cluster.objects.create(
        name="k8s",
        kind="kubernetes",
        api_url="https://k8s.example.edu:6443",
        kind_settings={"has_mpi_operator": True, "kube_addons": {"kueue": True}},
    )
    client = login(admin_user)
    change = f"/admin/clusters/cluster/{cluster.pk}/change/"
    page = client.get(change).content.decode()
    assert "installed: MPIJob templates can run" in page and 'name="has_mpi_operator"' not in page
    assert "Kueue (kueue.x-k8s.io/v1beta1): found; Kueue&#x27;s visibility API: not found" in page
    assert 'name="kueue_flavor"' in page and 'value="default-flavor"' in page
    form = {"name": "k8s", "enabled": "on", "run_as": cluster.run_as, "api_url": cluster.api_url,
            "kube_context": "lab", "gpu_sharing_factor": "0", "kueue_flavor": "a100", "has_mpi_operator": "",
            "accounts-TOTAL_FORMS": "0", "accounts-INITIAL_FORMS": "0"}  # fmt: skip
    refused = client.post(change, form).content.decode()
    assert "Ensure this value is greater than or equal to 1." in refused
    assert client.post(change, {**form, "gpu_sharing_factor": "4"}).status_code == 302
    saved = cluster_settings(Cluster.objects.get(pk=cluster.pk))
    assert (saved.kube_context, saved.gpu_sharing_factor, saved.kueue_flavor) == ("lab", 4, "a100")
    assert saved.has_mpi_operator is True and saved.kube_addons == {"kueue": True}  # not the admin's to type


def test_the_course_page_keeps_each_kind_s_settings_of_the_course(login, admin_user, course):
    client = login(admin_user)
    change = f"/admin/courses/course/{course.pk}/change/"
    page = client.get(change).content.decode()
    assert "Kubernetes with Kueue" in page and 'name="max_cpus"' in page and 'value="16"' in page
    form = {"name": course.name, "slug": course.slug, "description": "", "max_concurrent_jobs": 4, "max_gpus": 4,
            "max_cpus": 8, "max_memory_gb": 32, "max_pods": 5, "max_volumes": 2, "namespace_mode": "student",
            "ingress_host": "", "kueue_local_queue": "", "kueue_preemption": "never", "kueue_borrowing_limit": "",
            "kueue_lending_limit": "2", "enrollments-TOTAL_FORMS": 0, "enrollments-INITIAL_FORMS": 0}  # fmt: skip
    refused = client.post(change, {**form, "namespace_mode": "everyone"}).content.decode()
    assert "Select a valid choice. everyone is not one of the available choices." in refused
    assert client.post(change, form).status_code == 302
    saved = course_settings(Course.objects.get(pk=course.pk))
    assert saved == KubernetesCourseSettings(
        namespace_mode="student",
        max_cpus=8,
        max_memory_gb=32,
        max_pods=5,
        max_volumes=2,
        kueue_preemption="never",
        kueue_borrowing_limit=None,
        kueue_lending_limit=2,
    )
