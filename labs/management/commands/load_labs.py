from django.core.management.base import BaseCommand, CommandError

from courses.models import Course
from labs.builtin import LabFileInvalid, builtin_definitions, load_builtin_lab


class Command(BaseCommand):
    help = "Load the built-in labs (labs/builtin_labs/) into a course; loading again updates them in place."

    def add_arguments(self, parser):
        parser.add_argument("course", help="The course's slug.")
        parser.add_argument("labs", nargs="*", help="Built-in labs by slug; all of them when none is named.")

    def handle(self, *args, course: str, labs: list[str], **options):
        target = Course.objects.filter(slug=course).first()
        if target is None:
            raise CommandError(f"No course “{course}”.")
        for slug in labs or sorted(builtin_definitions()):
            try:
                lab = load_builtin_lab(target, slug)
            except LabFileInvalid as exc:
                raise CommandError(str(exc)) from exc
            self.stdout.write(f"Loaded {lab.title} into {target.slug}: {lab.sections.count()} sections.")
