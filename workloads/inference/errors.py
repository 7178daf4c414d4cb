"""Errors as each API dialect writes them, and counted, so a client of either API reads a refusal it knows.

OpenAI clients expect `{"error": {"message", "type", …}}`, Ollama clients `{"error": "…"}`; the path says which
(`/v1/…` is OpenAI). Every refusal is raised as `APIError` wherever it is found and written here, once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse


class APIError(Exception):
    def __init__(self, status: int, message: str, code: str = "invalid_request_error"):
        self.status, self.message, self.code = status, message, code


def first_error(errors: Sequence[Any]) -> str:
    """Pydantic's first complaint as one line, "options.temperature: Input should be …", for a person to read."""
    first = errors[0] if errors else {"loc": (), "msg": "invalid request"}
    where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
    return f"{where + ': ' if where else ''}{first.get('msg', 'invalid request')}"


def error_response(request: Request, status: int, message: str, code: str = "invalid_request_error") -> JSONResponse:
    api = "openai" if request.url.path.startswith("/v1/") else "ollama"
    request.app.state.server.metrics.requests.labels(api=api, status=str(status)).inc()
    if api == "openai":
        return JSONResponse({"error": {"message": message, "type": code, "param": None, "code": None}}, status)
    return JSONResponse({"error": message}, status)


async def _api_error(request: Request, exc: APIError) -> JSONResponse:
    return error_response(request, exc.status, exc.message, exc.code)


async def _bad_body(request: Request, exc: RequestValidationError) -> JSONResponse:
    return error_response(request, 400, first_error(exc.errors()))


def install(app: FastAPI) -> None:
    app.add_exception_handler(APIError, _api_error)
    app.add_exception_handler(RequestValidationError, _bad_body)
