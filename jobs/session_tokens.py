"""An interactive session's secret (JupyterLab's token): the portal's, never a file's.

Invariant: the token is made here with `secrets` before the job is submitted, kept on the job's row encrypted with
the credential keys (clusters/crypto.py), and handed to the job by its kind outside anything the file browser serves
(the job's environment through slurmrestd, a 0600 file in the portal's private runtime directory over SSH, a Secret
on Kubernetes); it is never in the job's script, which its page shows. The proxy adds it to each request it relays.
A retried submit hands the job the same token.
"""

from __future__ import annotations

import secrets

from clusters import crypto
from core.choices import SessionKind

from .models import Job


def is_session(job: Job) -> bool:
    return job.template.session != SessionKind.BATCH


def ensure(job: Job) -> str:
    """The job's session token, made once (a conditional update: two submits racing keep the first); "" for a batch
    job."""
    if not is_session(job):
        return ""
    if not job.session_token_encrypted:
        made = crypto.encrypt(secrets.token_urlsafe(32))
        Job.objects.filter(pk=job.pk, session_token_encrypted="").update(session_token_encrypted=made)
        job.session_token_encrypted = Job.objects.values_list("session_token_encrypted", flat=True).get(pk=job.pk)
    return crypto.decrypt(job.session_token_encrypted)


def of(job: Job) -> str:
    """The token the portal handed the job; "" where it made none (a job launched before the portal kept them)."""
    return crypto.decrypt(job.session_token_encrypted) if job.session_token_encrypted else ""
