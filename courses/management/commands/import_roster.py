from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from courses import invitations, terms
from courses.models import Course
from courses.roster import import_roster
from courses.roster_file import MAX_BYTES, RosterUnreadable, decode


class Command(BaseCommand):
    help = (
        "Enroll the people in a CSV (a header naming its columns, or lines of username,email,role) in a course, all "
        "rows or none; existing accounts are enrolled as they are; each new account is emailed an invitation to set "
        "its password (--no-invite: none)."
    )

    def add_arguments(self, parser):
        parser.add_argument("course", help="the course's slug")
        parser.add_argument(
            "roster",
            type=Path,
            help="CSV file: username,email,role[,cluster_username] (role: student, ta or instructor)",
        )
        parser.add_argument("--no-invite", action="store_true", help="create the accounts without mailing anyone")

    def handle(self, *args, course: str, roster: Path, **options):
        try:
            target = Course.objects.get(slug=course)
        except Course.DoesNotExist:
            raise CommandError(f"No course with slug {course!r}.") from None
        if terms.has_ended(target):
            raise CommandError(terms.read_only_message(target))
        try:
            with roster.open("rb") as file:
                raw = file.read(MAX_BYTES + 1)
        except OSError as exc:
            raise CommandError(f"Cannot read {roster}: {exc}") from None
        if len(raw) > MAX_BYTES:
            raise CommandError(f"{roster} is larger than {MAX_BYTES // (1024 * 1024)} MB; split it.")
        try:
            text = decode(raw)
        except RosterUnreadable as exc:
            raise CommandError(f"Cannot read {roster}: {exc}") from None
        with transaction.atomic():  # the invitations are queued once the enrollments are committed
            result = import_roster(target, text)
            invited = 0 if options["no_invite"] else invitations.invite_all(target, result.new_accounts)
        for error in result.errors:
            self.stderr.write(error)
        if not result.ok:
            raise CommandError(result.summary())
        for note in result.notes:
            self.stdout.write(note)
        note = f" {invited} invitation(s) to set a password queued." if invited else ""
        self.stdout.write(self.style.SUCCESS(result.summary() + note))
