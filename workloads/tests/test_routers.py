"""Each API dialect's router on its own, answered in-process through FastAPI's TestClient by a real engine.

The model is a freshly initialised tiny one (random weights, written as the trainer writes a run), so these
check the HTTP shapes, the refusals and their order, not the text; tests/test_server.py checks the whole server
as a process on a trained checkpoint.
"""

from __future__ import annotations

import json

import errors
import pytest
import torch
from fastapi import APIRouter, FastAPI
from fastapi.testclient import TestClient
from model import ModelConfig, TinyLM
from routers import ollama, openai, ops
from server import create_app
from state import State

GREEDY = {"temperature": 0, "seed": 1}


@pytest.fixture(scope="module")
def random_checkpoint(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("random-tiny")
    torch.manual_seed(0)
    model = TinyLM(ModelConfig(n_layer=1, n_head=2, n_embd=32, block_size=64))
    torch.save(model.state_dict(), run_dir / "model.pt")
    (run_dir / "config.json").write_text(json.dumps({"model": model.config.as_dict()}))
    return run_dir


@pytest.fixture(scope="module")
def loaded(random_checkpoint):
    state = State(random_checkpoint, "tinylm", "cpu", max_batch=4, max_wait_ms=1)
    state.load()
    assert state.engine is not None, state.error
    yield state
    state.engine.stop()


def client_for(state: State, router: APIRouter) -> TestClient:
    """An app with one dialect only: the router, the state it reads and the dialects' error shapes."""
    app = FastAPI()
    app.state.server = state
    errors.install(app)
    app.include_router(router)
    return TestClient(app)


def test_the_server_app_speaks_every_dialect_it_documents(random_checkpoint):
    paths = {route.path for route in create_app(State(random_checkpoint, "tinylm", "cpu", 1, 1)).routes}
    assert {
        "/api/generate",
        "/api/chat",
        "/api/tags",
        "/v1/completions",
        "/v1/chat/completions",
        "/v1/models",
        "/healthz",
        "/metrics",
    } <= paths


def test_ollama_router_streams_ndjson_that_adds_up_to_the_single_answer(loaded):
    client = client_for(loaded, ollama.router)
    body = {"model": "tinylm", "prompt": "In the", "options": {"num_predict": 6, **GREEDY}}
    streamed = [json.loads(line) for line in client.post("/api/generate", json=body).text.splitlines()]
    single = client.post("/api/generate", json={**body, "stream": False}).json()
    assert [line["done"] for line in streamed] == [False] * (len(streamed) - 1) + [True]
    assert "".join(line["response"] for line in streamed) == single["response"]
    assert single["eval_count"] == 6 and single["prompt_eval_count"] == len(b"In the")
    assert single["done_reason"] == "length" and single["created_at"].endswith("Z")


def test_ollama_router_chat_answers_as_the_assistant_and_lists_the_model(loaded):
    client = client_for(loaded, ollama.router)
    messages = [{"role": "user", "content": "Hi"}]
    body = {"model": "tinylm:latest", "messages": messages, "stream": False, "options": {"num_predict": 4, **GREEDY}}
    answer = client.post("/api/chat", json=body).json()
    assert answer["message"]["role"] == "assistant" and answer["done"] is True
    assert answer["prompt_eval_count"] == len(b"User: Hi\nAssistant:")
    assert [m["name"] for m in client.get("/api/tags").json()["models"]] == ["tinylm:latest"]


def test_ollama_router_refuses_in_ollamas_shape(loaded):
    client = client_for(loaded, ollama.router)
    response = client.post("/api/generate", json={"model": "llama3.1:8b", "prompt": "hi"})
    assert response.status_code == 404
    assert response.json() == {"error": "model 'llama3.1:8b' not found; this server serves 'tinylm'"}
    too_long = client.post("/api/generate", json={"model": "tinylm", "prompt": "x" * 64})
    assert too_long.status_code == 400 and "the model's context is 64" in too_long.json()["error"]


def test_openai_router_streams_sse_ending_with_done(loaded):
    client = client_for(loaded, openai.router)
    body = {"model": "tinylm", "prompt": "And", "max_tokens": 5, **GREEDY}
    plain = client.post("/v1/completions", json=body).json()
    assert plain["id"].startswith("cmpl-") and plain["object"] == "text_completion"
    assert plain["usage"] == {"prompt_tokens": 3, "completion_tokens": 5, "total_tokens": 8}
    response = client.post("/v1/completions", json={**body, "stream": True})
    assert response.headers["content-type"].startswith("text/event-stream")
    events = [line.removeprefix("data: ") for line in response.text.splitlines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(event) for event in events[:-1]]
    assert "".join(chunk["choices"][0]["text"] for chunk in chunks) == plain["choices"][0]["text"]
    assert chunks[-1]["choices"][0]["finish_reason"] == "length"


def test_openai_router_chat_opens_with_the_assistant_role_and_lists_the_model(loaded):
    client = client_for(loaded, openai.router)
    body = {"model": "tinylm", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4, **GREEDY}
    plain = client.post("/v1/chat/completions", json=body).json()
    assert plain["object"] == "chat.completion" and plain["choices"][0]["message"]["role"] == "assistant"
    stream = client.post("/v1/chat/completions", json={**body, "stream": True}).text
    chunks = [json.loads(line[6:]) for line in stream.splitlines() if line.startswith("data: {")]
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant"}
    assert all(chunk["object"] == "chat.completion.chunk" for chunk in chunks)
    assert (
        "".join(c["choices"][0]["delta"].get("content", "") for c in chunks)
        == plain["choices"][0]["message"]["content"]
    )
    assert [m["id"] for m in client.get("/v1/models").json()["data"]] == ["tinylm"]


def test_openai_router_refuses_in_openais_shape(loaded):
    client = client_for(loaded, openai.router)
    response = client.post("/v1/chat/completions", json={"model": "tinylm", "messages": []})
    assert response.status_code == 400
    assert response.json() == {
        "error": {"message": "messages is empty", "type": "invalid_request_error", "param": None, "code": None}
    }
    bad = client.post("/v1/completions", json={"model": "tinylm", "prompt": "hi", "temperature": -1})
    assert bad.status_code == 400 and bad.json()["error"]["message"].startswith("temperature: ")


def test_ops_router_reports_health_and_counts_requests(loaded):
    client = client_for(loaded, ops.router)
    health = client.get("/healthz").json()
    assert health == {"status": "ok", "model": "tinylm", "device": "cpu", "context": 64, "max_batch": 4}
    client_for(loaded, ollama.router).post("/api/generate", json={"model": "tinylm", "prompt": "A", "stream": False})
    assert 'gpulab_inference_requests_total{api="ollama",status="200"}' in client.get("/metrics").text


def test_while_loading_a_request_is_refused_for_its_own_faults_first_then_told_to_wait(tmp_path):
    state = State(tmp_path / "not-yet", "tinylm", "cpu", 1, 1)
    client = client_for(state, ollama.router)
    assert client.post("/api/generate", content=b"{not json").status_code == 400
    assert client.post("/api/generate", json={"model": "other", "prompt": "hi"}).status_code == 404
    assert client.post("/api/chat", json={"model": "tinylm", "messages": []}).status_code == 400
    waiting = client.post("/api/generate", json={"model": "tinylm", "prompt": "hi"})
    assert waiting.status_code == 503 and "still loading" in waiting.json()["error"]
    assert client.get("/api/tags").status_code == 503
    health = client_for(state, ops.router).get("/healthz")
    assert health.status_code == 503 and health.json()["status"] == "loading"
