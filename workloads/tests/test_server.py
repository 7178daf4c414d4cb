"""The inference server as a real process on 127.0.0.1: both APIs, streaming and not, batching, errors."""

import json
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest
from conftest import Server, copy_checkpoint

PROMPTS = ["In the beginning", "And God said, Let", "The LORD is my shepherd", "Blessed is the man that", "A", "And"]


def generate(client, prompt, **options):
    body = {
        "model": "tinylm",
        "prompt": prompt,
        "stream": False,
        "options": {"num_predict": 24, "temperature": 0, **options},
    }
    response = client.post("/api/generate", json=body)
    assert response.status_code == 200, response.text
    return response.json()


def test_ollama_generate_streams_ndjson_and_ends_with_done_and_counts(server):
    response = server.client.post(
        "/api/generate",
        json={"model": "tinylm", "prompt": "In the beginning", "options": {"num_predict": 20, "temperature": 0}},
    )
    assert response.headers["content-type"].startswith("application/x-ndjson")
    lines = [json.loads(line) for line in response.text.splitlines()]
    assert all(not line["done"] for line in lines[:-1]) and lines[-1]["done"] is True
    final = lines[-1]
    assert final["eval_count"] == 20 and final["prompt_eval_count"] == len(b"In the beginning")
    assert final["done_reason"] == "length" and final["total_duration"] > 0
    streamed = "".join(line["response"] for line in lines)
    assert streamed == generate(server.client, "In the beginning", num_predict=20)["response"]


def test_the_seed_labs_curl_and_jq_shape(server):
    """curl -s …/api/generate -d '{…}' | jq -r '.response' (no content-type header, streamed by default)."""
    if not shutil.which("jq"):
        pytest.fail("jq is not installed; `make test` installs it")
    options = {"num_predict": 12, "temperature": 0}
    body = json.dumps({"model": "tinylm", "prompt": "Say hello from Kubernetes.", "options": options})
    curl = subprocess.run(["curl", "-s", f"{server.url}/api/generate", "-d", body], capture_output=True, check=True)
    assert subprocess.run(["jq", "-r", ".response"], input=curl.stdout, capture_output=True, check=True).stdout
    joined = subprocess.run(["jq", "-j", ".response"], input=curl.stdout, capture_output=True, check=True)
    assert joined.stdout.decode() == generate(server.client, "Say hello from Kubernetes.", num_predict=12)["response"]


def test_ollama_chat_both_ways(server):
    messages = [{"role": "user", "content": "Give me 3 Kubernetes objects."}]
    body = {"model": "tinylm", "messages": messages, "options": {"num_predict": 16, "temperature": 0}}
    single = server.client.post("/api/chat", json={**body, "stream": False}).json()
    assert single["done"] is True and single["message"]["role"] == "assistant"
    streamed = [json.loads(line) for line in server.client.post("/api/chat", json=body).text.splitlines()]
    assert "".join(line["message"]["content"] for line in streamed) == single["message"]["content"]
    assert streamed[-1]["done"] and streamed[-1]["eval_count"] == single["eval_count"]


def test_openai_completions_plain_and_sse(server):
    body = {"model": "tinylm", "prompt": "And God said", "max_tokens": 16, "temperature": 0}
    plain = server.client.post("/v1/completions", json=body).json()
    assert plain["object"] == "text_completion" and plain["choices"][0]["finish_reason"] == "length"
    assert plain["usage"] == {"prompt_tokens": 12, "completion_tokens": 16, "total_tokens": 28}
    response = server.client.post("/v1/completions", json={**body, "stream": True})
    assert response.headers["content-type"].startswith("text/event-stream")
    events = [line[6:] for line in response.text.splitlines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert "".join(c["choices"][0]["text"] for c in chunks) == plain["choices"][0]["text"]
    assert chunks[-1]["choices"][0]["finish_reason"] == "length"


def test_openai_chat_completions_plain_and_sse(server):
    body = {"model": "tinylm", "messages": [{"role": "user", "content": "Hello"}], "max_tokens": 12, "temperature": 0}
    plain = server.client.post("/v1/chat/completions", json=body).json()
    assert plain["object"] == "chat.completion" and plain["choices"][0]["message"]["role"] == "assistant"
    events = [
        line[6:]
        for line in server.client.post("/v1/chat/completions", json={**body, "stream": True}).text.splitlines()
        if line.startswith("data: ")
    ]
    chunks = [json.loads(e) for e in events[:-1]]
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant"}
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks)
    assert text == plain["choices"][0]["message"]["content"]


def test_model_lists(server):
    assert [m["id"] for m in server.client.get("/v1/models").json()["data"]] == ["tinylm"]
    assert [m["name"] for m in server.client.get("/api/tags").json()["models"]] == ["tinylm:latest"]
    assert generate(server.client, "A", num_predict=2)["done"]  # "tinylm" and "tinylm:latest" both work
    assert (
        server.client.post(
            "/api/generate",
            json={"model": "tinylm:latest", "prompt": "A", "stream": False, "options": {"num_predict": 2}},
        ).status_code
        == 200
    )


def test_batched_output_at_temperature_zero_equals_unbatched(server, unbatched_server):
    alone = [generate(unbatched_server.client, p)["response"] for p in PROMPTS]
    before = _batch_histogram(server)
    with ThreadPoolExecutor(max_workers=len(PROMPTS)) as pool:
        together = list(pool.map(lambda p: generate(server.client, p)["response"], PROMPTS))
    assert together == alone
    after = _batch_histogram(server)
    assert after["count"] > before["count"] and after["sum"] - before["sum"] > after["count"] - before["count"]


def _batch_histogram(server) -> dict:
    text = server.client.get("/metrics").text
    values = {}
    for line in text.splitlines():
        if line.startswith("gpulab_inference_batch_size_count"):
            values["count"] = float(line.split()[-1])
        if line.startswith("gpulab_inference_batch_size_sum"):
            values["sum"] = float(line.split()[-1])
    return values


def test_same_seed_same_sample(server):
    first = generate(server.client, "In the", temperature=1.0, seed=7, num_predict=30)["response"]
    again = generate(server.client, "In the", temperature=1.0, seed=7, num_predict=30)["response"]
    other = generate(server.client, "In the", temperature=1.0, seed=8, num_predict=30)["response"]
    assert first == again and first != other


@pytest.mark.parametrize(
    ("path", "body", "status", "words"),
    [
        ("/api/generate", {"model": "llama3.1:8b", "prompt": "hi"}, 404, "not found"),
        ("/v1/completions", {"model": "gpt-4", "prompt": "hi"}, 404, "not found"),
        ("/api/generate", {"model": "tinylm", "prompt": ""}, 400, "prompt is empty"),
        ("/v1/completions", {"model": "tinylm", "prompt": ""}, 400, "prompt is empty"),
        ("/v1/completions", {"model": "tinylm", "prompt": "hi", "max_tokens": 100000}, 400, "between 1 and"),
        ("/api/generate", {"model": "tinylm", "prompt": "hi", "options": {"num_predict": 0}}, 400, "between 1 and"),
        ("/api/generate", {"model": "tinylm", "prompt": "x" * 5000}, 400, "context"),
        ("/api/generate", {"prompt": "hi"}, 400, "model"),
        ("/v1/chat/completions", {"model": "tinylm", "messages": []}, 400, "messages is empty"),
        ("/v1/completions", {"model": "tinylm", "prompt": "hi", "temperature": -1}, 400, "temperature"),
    ],
)
def test_bad_requests_get_a_clear_4xx(server, path, body, status, words):
    response = server.client.post(path, json=body)
    assert response.status_code == status
    error = response.json()["error"]
    message = error["message"] if isinstance(error, dict) else error
    assert words in message


def test_body_that_is_not_json_is_400(server):
    response = server.client.post("/api/generate", content=b"{not json")
    assert response.status_code == 400 and "not valid JSON" in response.json()["error"]


def test_503_while_loading_then_ready_when_the_checkpoint_arrives(checkpoint, empty_checkpoint_dir):
    srv = Server(empty_checkpoint_dir)
    try:
        srv.wait_until(503)
        assert srv.client.get("/healthz").json()["status"] == "loading"
        response = srv.client.post("/api/generate", json={"model": "tinylm", "prompt": "hi"})
        assert response.status_code == 503 and "loading" in response.json()["error"]
        copy_checkpoint(checkpoint, empty_checkpoint_dir)
        srv.wait_until(200)
        assert generate(srv.client, "In", num_predict=3)["done"]
    finally:
        srv.stop()


def test_metrics_report_requests_ttft_and_throughput(server):
    generate(server.client, "In the beginning", num_predict=8)
    text = server.client.get("/metrics").text
    for name in [
        "gpulab_inference_requests_total",
        "gpulab_inference_time_to_first_token_seconds_count",
        "gpulab_inference_tokens_per_second_count",
        "gpulab_inference_batch_size_count",
        "gpulab_inference_generated_tokens_total",
    ]:
        assert name in text
    assert 'gpulab_inference_requests_total{api="ollama",status="200"}' in text
