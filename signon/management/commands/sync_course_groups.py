"""manage.py sync_course_groups [--course SLUG]: rosters follow their LDAP groups now, not only at sign-in.

Everyone in a course's LDAP groups is brought in (an account is made from the directory for people who never signed
in), and everyone group sync enrolled who has left them is removed. Each change is audited (via "command").
OIDC group claims can only be read when the person signs in; those courses follow at each sign-in.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from signon import directory
from signon.models import CourseGroup, GroupEnrollment, Source
from signon.sync import current_via, sync_memberships


class Command(BaseCommand):
    help = "Enroll the members of each course's LDAP groups and remove those who left them."

    def add_arguments(self, parser):
        parser.add_argument("--course", help="only this course (its slug)")

    def handle(self, *args, course=None, **options):
        if not getattr(settings, "SIGNON_LDAP", False) or not getattr(settings, "AUTH_LDAP_GROUP_SEARCH", None):
            raise CommandError("LDAP group sync needs LDAP_SERVER_URI and LDAP_GROUP_SEARCH_BASE to be set.")
        links = CourseGroup.objects.filter(source=Source.LDAP)
        if course:
            links = links.filter(course__slug=course)
            if not links.exists():
                raise CommandError(f"Course {course!r} names no LDAP group (add one in /admin/, Course campus groups).")
        connection = directory.connect()
        try:
            usernames: set[str] = set()
            for group in sorted({link.group for link in links}):
                usernames |= directory.group_members(connection, group)
        finally:
            connection.unbind_s()
        courses = links.values("course")
        User = get_user_model()
        # People group sync enrolled before: those who left every group must be looked at too.
        made = GroupEnrollment.objects.filter(source=Source.LDAP, course__in=courses)
        previously = User.objects.filter(pk__in=made.values("user"))
        usernames |= set(previously.values_list("username", flat=True))
        token = current_via.set("command")
        changes = []
        try:
            for username in sorted(usernames):
                user = directory.refresh_user(username)
                if user is None:  # gone from the directory: no group holds them any more
                    user = User.objects.filter(username=username).first()
                    if user is not None:
                        changes += sync_memberships(user, Source.LDAP, set())
                    continue
                changes += getattr(user, "_sync_changes", [])
        finally:
            current_via.reset(token)
        for change in changes:
            self.stdout.write(f"{change.course.slug}: {change.username} {change.get_action_display().lower()}")
        self.stdout.write(f"{len(usernames)} people checked, {len(changes)} change(s).")
