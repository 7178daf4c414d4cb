import secrets
from datetime import timedelta
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.utils import timezone

from clusters.identity import cluster_username, set_cluster_username
from courses.models import Course, Enrollment, Role

USERS = [
    ("admin", None),
    ("instructor", Role.INSTRUCTOR),
    ("student1", Role.STUDENT),
    ("student2", Role.STUDENT),
]
# Each demo login's own user on the local cluster (scripts/local_slurm.sh makes them: GPULAB_DEMO_USERS), so every
# demo job runs as its own user and no student reaches another's files or jobs.
CLUSTER_USER_PREFIX = "lab"


class Command(BaseCommand):
    help = (
        "Create the demo course with an admin, an instructor and two students, each with their own cluster username "
        "(lab<login>); write their logins to a file."
    )

    def add_arguments(self, parser):
        parser.add_argument("--logins", type=Path, required=True, help="file that keeps the generated passwords")

    def handle(self, *args, logins: Path, **options):
        course, _ = Course.objects.get_or_create(
            slug="demo",
            defaults={
                "name": "GPU Summer School (demo)",
                "max_concurrent_jobs": 4,
                "max_gpus": 4,
                "description": "Train a tiny LM on SLURM, then serve it.",
            },
        )
        if course.term_starts_at is None:  # a term around today, so the demo shows its dates and notices
            today = timezone.now().replace(hour=0, minute=0, second=0, microsecond=0)
            course.term_starts_at, course.term_ends_at = today - timedelta(days=30), today + timedelta(days=60)
            course.save(update_fields=["term_starts_at", "term_ends_at"])
        known = dict(line.split(" ", 1) for line in logins.read_text().splitlines()) if logins.exists() else {}
        User = get_user_model()
        for username, role in USERS:
            password = known.get(username) or secrets.token_urlsafe(9)
            user, created = User.objects.get_or_create(username=username, defaults={"email": f"{username}@lab.local"})
            if created or username not in known:
                user.set_password(password)
            user.is_staff = user.is_superuser = role is None
            user.save()
            if role:
                Enrollment.objects.update_or_create(course=course, user=user, defaults={"role": role})
            if not cluster_username(user):  # one an admin changed since stays
                set_cluster_username(user, f"{CLUSTER_USER_PREFIX}{username}")
            known[username] = password
        logins.parent.mkdir(parents=True, exist_ok=True)
        logins.write_text("".join(f"{name} {password}\n" for name, password in known.items()))
        logins.chmod(0o600)
        self.stdout.write(
            self.style.SUCCESS(
                f"Demo course “{course.name}” with {len(USERS)} users, each with a cluster user of their own."
            )
        )
