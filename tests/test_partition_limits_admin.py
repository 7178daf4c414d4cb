"""The cluster admin page's learnt partition limits: one line each, and a partition name is text, never markup
(the names come from the cluster's own `scontrol show partition`)."""

from django.contrib.admin.sites import site

from clusters.admin import ClusterAdmin
from clusters.models import Cluster


def test_partition_names_from_the_cluster_are_escaped_one_line_each():
    cluster = Cluster(
        name="c",
        partition_limits={
            "<b>gpu</b>": {"name": "<b>gpu</b>", "nodes": 1, "gpus_per_node": 4, "max_minutes": 120},
            "debug": {"name": "debug", "nodes": 1, "gpus_per_node": 0, "max_minutes": 60, "default": True},
        },
    )
    shown = str(ClusterAdmin(Cluster, site).partition_limits_summary(cluster))
    assert "<b>gpu</b>" not in shown and "&lt;b&gt;gpu&lt;/b&gt;" in shown
    assert shown.count("<br>") == 2
