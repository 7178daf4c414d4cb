"""Structured logs: one JSON object per line, carrying the request id and the job id of whatever is running.

The ids live in context variables, so they follow a request through sync and async code and a Celery task
through its whole run; `RequestIdMiddleware` sets the request id, the access helper binds the job id when it
hands a job out, and `ops.signals` carries the request id into the tasks a request queues.
"""

from __future__ import annotations

import contextvars
import json
import logging
import re
import uuid
from datetime import UTC, datetime

request_id_var: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="")
job_id_var: contextvars.ContextVar[str] = contextvars.ContextVar("job_id", default="")

# A proxy's X-Request-ID is kept only when it looks like an id: it ends up in every log line.
_INCOMING_ID = re.compile(r"^[A-Za-z0-9._-]{8,64}$")
REQUEST_ID_HEADER = "X-Request-ID"


def new_request_id(incoming: str | None = None) -> str:
    if incoming and _INCOMING_ID.match(incoming):
        return incoming
    return uuid.uuid4().hex


def bind_job(job_id) -> None:
    """Mark the rest of this request or task as being about one job."""
    job_id_var.set(str(job_id))


class ContextFilter(logging.Filter):
    """Adds request_id and job_id to every record (empty strings outside a request or task)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = request_id_var.get()
        record.job_id = job_id_var.get()
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line; fields a log shipper can index without parsing the message."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for field in ("request_id", "job_id"):
            value = getattr(record, field, "")
            if value:
                entry[field] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


class RequestIdMiddleware:
    """Gives each request an id (the proxy's X-Request-ID when it sent a sane one) and returns it as a header."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        request.id = new_request_id(request.headers.get(REQUEST_ID_HEADER))
        request_token = request_id_var.set(request.id)
        job_token = job_id_var.set("")
        try:
            response = self.get_response(request)
        finally:
            request_id_var.reset(request_token)
            job_id_var.reset(job_token)
        response[REQUEST_ID_HEADER] = request.id
        return response
