from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from clusters.clusters_d import sync_directory
from courses.cluster_files import link_courses


class Command(BaseCommand):
    help = "Create or update clusters from a clusters.d-style directory of YAML files (one file per cluster)."

    def add_arguments(self, parser):
        parser.add_argument("directory", type=Path)

    def handle(self, *args, directory: Path, **options):
        if not directory.is_dir():
            raise CommandError(f"{directory} is not a directory.")
        result = sync_directory(directory, link_courses=link_courses)
        for name in result.created:
            self.stdout.write(f"created {name}")
        for name in result.updated:
            self.stdout.write(f"updated {name}")
        for error in result.errors:
            self.stderr.write(error)
        if result.errors:
            raise CommandError(f"{len(result.errors)} file(s) could not be loaded.")
