"""The SLURM cluster page's partitions and GPU types: typed as "debug, gpu", kept as lists, wrong names refused in
words before anything is saved."""

from html import unescape

import pytest
from django.urls import reverse

from clusters.models import Cluster

pytestmark = pytest.mark.django_db


def posted(cluster, **changes) -> dict:
    form = {"name": cluster.name, "title": cluster.title, "enabled": "on", "run_as": cluster.run_as,
            "host": cluster.host, "port": str(cluster.port), "lab_dir": cluster.lab_dir, "preamble": "",
            "shared_user": cluster.shared_user, "partitions": "debug, gpu", "gpu_types": "",
            "accounts-TOTAL_FORMS": "0", "accounts-INITIAL_FORMS": "0"}  # fmt: skip
    return {**form, **changes}


def test_partitions_and_gpu_types_read_and_save_as_comma_separated_names(login, admin_user, cluster):
    Cluster.objects.filter(pk=cluster.pk).update(partitions=["debug", "gpu"], gpu_types=["a100"])
    admin = login(admin_user)
    change = reverse("admin:clusters_cluster_change", args=[cluster.pk])
    page = unescape(admin.get(change).content.decode())
    assert 'name="partitions" value="debug, gpu"' in page and 'name="gpu_types" value="a100"' in page
    assert '["debug", "gpu"]' not in page

    answer = admin.post(change, posted(cluster, partitions="gpu,  debug gpu", gpu_types="a100, h100_80gb"))
    assert answer.status_code == 302, unescape(answer.content.decode())
    saved = Cluster.objects.get(pk=cluster.pk)
    assert (saved.partitions, saved.gpu_types) == (["gpu", "debug"], ["a100", "h100_80gb"])

    assert admin.post(change, posted(cluster, partitions="", gpu_types=" ")).status_code == 302
    saved = Cluster.objects.get(pk=cluster.pk)
    assert (saved.partitions, saved.gpu_types) == ([], [])


@pytest.mark.parametrize(
    "typed",
    ['["gpu"]', "gpu;reboot", "gpu $(id)", "gpu\n--partition=all", "{'a': 1}", "débug"],
)
def test_a_value_that_is_no_scheduler_name_is_refused_and_nothing_is_saved(login, admin_user, cluster, typed):
    Cluster.objects.filter(pk=cluster.pk).update(partitions=["debug"])
    change = reverse("admin:clusters_cluster_change", args=[cluster.pk])
    answer = login(admin_user).post(change, posted(cluster, partitions=typed))
    assert answer.status_code == 200
    assert "Not a name SLURM could have:" in unescape(answer.content.decode())
    assert Cluster.objects.get(pk=cluster.pk).partitions == ["debug"]
