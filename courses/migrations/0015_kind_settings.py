"""The Kubernetes-only course columns move into Course.kind_settings["kubernetes"] (clusters/kind_settings.py), every
value with them: the namespaces and their per-student quotas, the ingress host and the course's Kueue queue.

Expand, then contract (docs/operations.md), as clusters' 0016: kind_settings has a database default for the previous
release's inserts, and the old columns stay, each with a database default, until the next release drops them.
"""

from django.db import migrations, models

KUBERNETES = {
    "namespace_mode": "student",
    "max_cpus": 16,
    "max_memory_gb": 96,
    "max_pods": 16,
    "max_volumes": 4,
    "ingress_host": "",
    "kueue_local_queue": "",
    "kueue_preemption": "mlbatch",
    "kueue_borrowing_limit": None,
    "kueue_lending_limit": None,
}


# The old columns as the database keeps them until the next release: each with a database default.
KEPT = {
    "namespace_mode": models.CharField(max_length=16, default="student", db_default="student"),
    "max_cpus": models.PositiveIntegerField(default=16, db_default=16),
    "max_memory_gb": models.PositiveIntegerField(default=96, db_default=96),
    "max_pods": models.PositiveIntegerField(default=16, db_default=16),
    "max_volumes": models.PositiveIntegerField(default=4, db_default=4),
    "ingress_host": models.CharField(blank=True, max_length=253, db_default=""),
    "kueue_local_queue": models.CharField(blank=True, max_length=253, db_default=""),
    "kueue_preemption": models.CharField(blank=True, max_length=16, default="mlbatch", db_default="mlbatch"),
    "kueue_borrowing_limit": models.PositiveIntegerField(blank=True, null=True),
    "kueue_lending_limit": models.PositiveIntegerField(blank=True, null=True),
}


def into_settings(apps, schema_editor):
    Course = apps.get_model("courses", "Course")
    for course in Course.objects.all():
        course.kind_settings = {"kubernetes": {name: getattr(course, name) for name in KUBERNETES}}
        course.save(update_fields=["kind_settings"])


def out_of_settings(apps, schema_editor):
    Course = apps.get_model("courses", "Course")
    for course in Course.objects.all():
        kept = course.kind_settings.get("kubernetes", {})
        for name, default in KUBERNETES.items():
            setattr(course, name, kept.get(name, default))
        course.save(update_fields=list(KUBERNETES))


class Migration(migrations.Migration):
    dependencies = [
        ("courses", "0014_kueue_queue"),
    ]

    operations = [
        migrations.AddField(
            model_name="course",
            name="kind_settings",
            field=models.JSONField(
                blank=True, default=dict, db_default={}, editable=False, verbose_name="kinds' settings"
            ),
        ),
        migrations.RunPython(into_settings, out_of_settings),
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.RemoveField(model_name="course", name=name) for name in KUBERNETES],
            database_operations=[
                migrations.AlterField(model_name="course", name=name, field=field) for name, field in KEPT.items()
            ],
        ),
    ]
