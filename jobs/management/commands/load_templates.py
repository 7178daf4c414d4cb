from django.core.management.base import BaseCommand, CommandError

from courses.models import Course
from jobs.builtin import load_builtin_templates


class Command(BaseCommand):
    help = "Create or update the built-in job templates (GPU check, MPI hello, Tiny LM single/DDP) and publish them."

    def add_arguments(self, parser):
        parser.add_argument("--course", action="append", default=[], help="attach to this course (repeatable)")
        parser.add_argument("--draft", action="store_true", help="leave new templates unpublished")

    def handle(self, *args, course, draft, **options):
        courses = list(Course.objects.filter(slug__in=course))
        missing = set(course) - {c.slug for c in courses}
        if missing:
            raise CommandError(f"No course with slug {', '.join(sorted(missing))}.")
        try:
            templates = load_builtin_templates(courses, publish=not draft)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        names = ", ".join(t.name for t in templates)
        self.stdout.write(self.style.SUCCESS(f"{len(templates)} templates: {names}"))
