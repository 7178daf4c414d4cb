"""`manage.py rebuild_series`: loss and tok/s curves of finished jobs, rebuilt from their logs' trainer lines."""

from django.core.management.base import BaseCommand

from clusters.backends.base import BackendError
from core.choices import TERMINAL_STATES
from jobs.models import Job
from telemetry.rebuild import rebuild_trainer_series


class Command(BaseCommand):
    help = "Rebuild the Loss and Throughput charts of finished jobs from their logs, where none were stored."

    def add_arguments(self, parser):
        parser.add_argument("jobs", nargs="*", help="Job ids; without any, every finished job of --course.")
        parser.add_argument("--course", help="A course slug: its finished jobs.")

    def handle(self, *args, jobs, course, **options):
        selected = Job.objects.filter(state__in=TERMINAL_STATES).exclude(scheduler_id="").select_related("cluster")
        if jobs:
            selected = selected.filter(pk__in=jobs)
        elif course:
            selected = selected.filter(course__slug=course)
        else:
            self.stderr.write("Name job ids or a --course.")
            return
        for job in selected:
            try:
                count = rebuild_trainer_series(job)
            except BackendError as exc:  # one unreachable cluster must not stop the others
                self.stderr.write(f"{job.pk}: {exc}")
                continue
            self.stdout.write(f"{job.pk}: {count} trainer points" if count else f"{job.pk}: nothing to rebuild")
