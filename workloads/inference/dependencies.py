"""What a route asks FastAPI for (`Depends`): the server's state, the engine once it is ready, a checked body.

Routes declare the body before the engine, and FastAPI resolves dependencies in that order, so a request is
refused for what is wrong with it (400 malformed, 404 unknown model) before it is told the model is still
loading (503).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Annotated, TypeVar

from engine import Engine
from errors import APIError, first_error
from fastapi import Depends, Request
from pydantic import BaseModel, ValidationError
from state import State

Body = TypeVar("Body", bound=BaseModel)


# Dependencies are `async def` although they never wait: FastAPI runs plain `def` ones on a thread pool, a hop
# per request that the decode thread's share of the GIL would make slow.
async def get_state(request: Request) -> State:
    return request.app.state.server


ServerState = Annotated[State, Depends(get_state)]


async def ready_engine(state: ServerState) -> Engine:
    if state.engine is None:
        raise APIError(503, state.error or "the model is still loading; try again in a moment", "unavailable")
    return state.engine


ReadyEngine = Annotated[Engine, Depends(ready_engine)]


def checked_body(schema: type[Body]) -> Callable[..., Awaitable[Body]]:
    """A dependency giving the request's body as `schema`, for the model this server serves, chats not empty."""

    async def read(request: Request, state: ServerState) -> Body:
        body = await parse(request, schema)
        model = getattr(body, "model", "")
        if not state.serves(model):
            raise APIError(404, f"model '{model}' not found; this server serves '{state.model_name}'", "not_found")
        if "messages" in type(body).model_fields and not body.messages:
            raise APIError(400, "messages is empty")
        return body

    return read


async def parse(request: Request, schema: type[Body]) -> Body:
    """The JSON body, whatever Content-Type the client sent (curl -d sends a form type; Ollama accepts it)."""
    try:
        data = json.loads(await request.body() or b"{}")
    except ValueError:
        raise APIError(400, "the request body is not valid JSON") from None
    try:
        return schema.model_validate(data)
    except ValidationError as exc:
        raise APIError(400, first_error(exc.errors())) from None
