"""The settings a kind owns on the admin's pages, in Chromium: a new cluster shows the chosen kind's settings only, a
Kubernetes cluster's page draws its settings and what Test connection found (in words, no input), and the course page
each kind's settings of the course; on a laptop and on a 390 px phone."""

import pytest
from playwright.sync_api import expect

from clusters.backends.kinds.kubernetes.settings import cluster_settings, course_settings
from clusters.models import Cluster
from courses.models import Course

from .test_pages_browser import SHOTS, no_sideways_scroll, signed_in

pytestmark = pytest.mark.browser


@pytest.mark.timeout(120)
def test_admin_types_a_kubernetes_cluster_s_and_a_course_s_settings_and_reads_what_was_found(
    live_server, browser, admin_user, course
):
    admin = signed_in(browser, live_server, "ada", 1280)
    admin.goto(f"{live_server.url}/admin/clusters/cluster/add/")
    admin.select_option("#id_kind", "kubernetes")
    expect(admin.locator("#id_kube_context")).to_be_visible()
    expect(admin.locator("#id_host")).to_be_hidden()  # the SLURM kinds' fields, hidden once Kubernetes is picked
    admin.fill("#id_name", "campus-k8s")
    admin.fill("#id_api_url", "https://k8s.example.edu:6443")
    admin.fill("#id_kube_context", "lab")
    admin.fill("#id_gpu_sharing_factor", "0")
    admin.click("input[name=_continue]")
    expect(admin.locator(".errorlist").first).to_contain_text("greater than or equal to 1")
    admin.screenshot(path=f"{SHOTS}/admin-kind-settings-refused-1280.png", full_page=True)
    admin.fill("#id_gpu_sharing_factor", "4")
    admin.click("input[name=_continue]")
    expect(admin.locator(".messagelist")).to_contain_text("was added successfully")
    cluster = Cluster.objects.get(name="campus-k8s")
    assert (cluster_settings(cluster).kube_context, cluster_settings(cluster).gpu_sharing_factor) == ("lab", 4)

    Cluster.objects.filter(pk=cluster.pk).update(
        kind_settings={**cluster.kind_settings, "has_mpi_operator": True, "kube_addons": {"kueue": True}}
    )
    admin.reload()
    expect(admin.locator("body")).to_contain_text("installed: MPIJob templates can run")
    expect(admin.locator("body")).to_contain_text("Kueue (kueue.x-k8s.io/v1beta1): found")
    assert admin.locator("[name=has_mpi_operator]").count() == 0
    admin.screenshot(path=f"{SHOTS}/admin-kind-settings-kubernetes-1280.png", full_page=True)
    phone = signed_in(browser, live_server, "ada", 390)
    phone.goto(admin.url)
    phone.screenshot(path=f"{SHOTS}/admin-kind-settings-kubernetes-390.png", full_page=True)

    admin.goto(f"{live_server.url}/admin/courses/course/{course.pk}/change/")
    admin.fill("#id_max_cpus", "8")
    admin.select_option("#id_kueue_preemption", "never")
    admin.click("input[name=_continue]")
    expect(admin.locator(".messagelist")).to_contain_text("was changed successfully")
    admin.screenshot(path=f"{SHOTS}/admin-kind-settings-course-1280.png", full_page=True)
    saved = course_settings(Course.objects.get(pk=course.pk))
    assert (saved.max_cpus, saved.kueue_preemption, saved.namespace_mode) == (8, "never", "course")
    phone.goto(admin.url)
    no_sideways_scroll(phone)
    phone.screenshot(path=f"{SHOTS}/admin-kind-settings-course-390.png", full_page=True)
