from django.core.management.base import BaseCommand

from clusters.crypto import CredentialKeyError
from clusters.services import rotate_all


class Command(BaseCommand):
    help = (
        "Re-encrypt every stored cluster credential under the first key of CREDENTIAL_KEYS. "
        "Put the new key first, run this, then drop the old key."
    )

    def handle(self, *args, **options):
        try:
            count = rotate_all()
        except CredentialKeyError as exc:
            self.stderr.write(str(exc))
            raise SystemExit(1) from None
        self.stdout.write(self.style.SUCCESS(f"Re-encrypted {count} credential(s) under the newest key."))
