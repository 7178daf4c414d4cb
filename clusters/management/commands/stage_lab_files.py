from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from clusters.backends import BackendError
from clusters.kinds import get_backend
from clusters.models import Cluster


class Command(BaseCommand):
    help = "Copy the bundled workloads (trainer, inference server, MPI hello) into a cluster's lab directory."

    def add_arguments(self, parser):
        parser.add_argument("cluster", help="the cluster's name")

    def handle(self, *args, cluster: str, **options):
        target = Cluster.objects.filter(name=cluster).first()
        if target is None:
            raise CommandError(f"No cluster named {cluster!r}.")
        try:
            count = get_backend(target).stage_lab_files(settings.GPULAB_LAB_FILES_DIR)
        except BackendError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(self.style.SUCCESS(f"Copied {count} files to {target.lab_dir} on {target}."))
