"""Operations: GET /healthz (what Kubernetes' readiness probe and the tests wait on: 503 with the reason until
the checkpoint is loaded) and GET /metrics (Prometheus text: requests, time to first token, speed, batches).
"""

from __future__ import annotations

from dependencies import ServerState
from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

router = APIRouter(tags=["operations"])


@router.get("/healthz")
async def healthz(state: ServerState):
    if state.engine is None:
        return JSONResponse({"status": "loading", "detail": state.error or "waiting for the checkpoint"}, 503)
    return {
        "status": "ok",
        "model": state.model_name,
        "device": state.device.type,
        "context": state.block_size,
        "max_batch": state.max_batch,
    }


@router.get("/metrics")
async def metrics(state: ServerState):
    if state.engine:
        state.metrics.queued.set(state.engine.queued())
    return Response(generate_latest(state.metrics.registry), media_type=CONTENT_TYPE_LATEST)
