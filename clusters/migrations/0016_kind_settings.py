"""The kind-only cluster columns move into Cluster.kind_settings (clusters/kind_settings.py), every value with them.

A cluster's kind owns them: Kubernetes its API server's CA and context, GPU sharing, Prometheus, Kueue's cohort and
flavor and what Test connection found (MPI Operator, metrics API, add-ons); both SLURM kinds whether the cluster
keeps accounting. A row of another kind (a site's own) keeps every value that is not the column's default.

Expand, then contract (docs/operations.md): the previous release, still running while this applies, reads and writes
the old columns and inserts rows without kind_settings; so kind_settings has a database default, and the old columns
stay in the database with database defaults (this release's code inserts rows without them) until the next release
drops them. Only the models stop naming them.
"""

from django.db import migrations, models

KUBERNETES = [
    "ca_certificate",
    "kube_context",
    "gpu_sharing_factor",
    "prometheus_url",
    "has_mpi_operator",
    "has_metrics_api",
    "kube_addons",
    "kueue_cohort",
    "kueue_flavor",
]
SLURM = ["has_accounting"]
OWNED = {"kubernetes": KUBERNETES, "slurm": SLURM, "slurm-rest": SLURM}
DEFAULTS = {
    "ca_certificate": "",
    "kube_context": "",
    "gpu_sharing_factor": 1,
    "prometheus_url": "",
    "has_mpi_operator": False,
    "has_metrics_api": False,
    "kube_addons": {},
    "kueue_cohort": "",
    "kueue_flavor": "default-flavor",
    "has_accounting": None,
}


# The old columns as the database keeps them until the next release: each with a database default.
KEPT = {
    "ca_certificate": models.TextField(blank=True, db_default=""),
    "kube_context": models.CharField(blank=True, max_length=255, db_default=""),
    "gpu_sharing_factor": models.PositiveSmallIntegerField(default=1, db_default=1),
    "prometheus_url": models.URLField(blank=True, db_default=""),
    "has_mpi_operator": models.BooleanField(default=False, db_default=False),
    "has_metrics_api": models.BooleanField(default=False, db_default=False),
    "kube_addons": models.JSONField(blank=True, default=dict, db_default={}, editable=False),
    "kueue_cohort": models.CharField(blank=True, max_length=253, db_default=""),
    "kueue_flavor": models.CharField(blank=True, max_length=253, default="default-flavor", db_default="default-flavor"),
    "has_accounting": models.BooleanField(blank=True, default=None, null=True),
}


def into_settings(apps, schema_editor):
    Cluster = apps.get_model("clusters", "Cluster")
    for cluster in Cluster.objects.all():
        names = OWNED.get(cluster.kind)
        if names is None:  # not a kind this release ships: whatever was set
            names = [name for name in DEFAULTS if getattr(cluster, name) != DEFAULTS[name]]
        cluster.kind_settings = {name: getattr(cluster, name) for name in names}
        cluster.save(update_fields=["kind_settings"])


def out_of_settings(apps, schema_editor):
    Cluster = apps.get_model("clusters", "Cluster")
    for cluster in Cluster.objects.all():
        for name, default in DEFAULTS.items():
            value = cluster.kind_settings.get(name, default)
            setattr(cluster, name, default if value is None and default is not None else value)
        cluster.save(update_fields=list(DEFAULTS))


class Migration(migrations.Migration):
    dependencies = [
        ("clusters", "0015_lab_sessions_on_any_kind"),
    ]

    operations = [
        migrations.AddField(
            model_name="cluster",
            name="kind_settings",
            field=models.JSONField(
                blank=True, default=dict, db_default={}, editable=False, verbose_name="kind's settings"
            ),
        ),
        migrations.RunPython(into_settings, out_of_settings),
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.RemoveField(model_name="cluster", name=name) for name in DEFAULTS],
            database_operations=[
                migrations.AlterField(model_name="cluster", name=name, field=field) for name, field in KEPT.items()
            ],
        ),
    ]
