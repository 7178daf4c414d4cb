"""Prometheus metrics of the inference server, in a registry of its own."""

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "gpulab_inference_requests", "Requests by API and status", ["api", "status"], registry=self.registry
        )
        self.ttft = Histogram(
            "gpulab_inference_time_to_first_token_seconds",
            "Time to first token",
            buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10),
            registry=self.registry,
        )
        self.tokens_per_second = Histogram(
            "gpulab_inference_tokens_per_second",
            "Decode speed of one request",
            buckets=(1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500),
            registry=self.registry,
        )
        self.batch_size = Histogram(
            "gpulab_inference_batch_size",
            "Requests decoded together in one step",
            buckets=(1, 2, 4, 8, 16, 32, 64),
            registry=self.registry,
        )
        self.generated = Counter("gpulab_inference_generated_tokens", "Tokens generated", registry=self.registry)
        self.prompt = Counter("gpulab_inference_prompt_tokens", "Prompt tokens read", registry=self.registry)
        self.queued = Gauge(
            "gpulab_inference_queued_requests", "Requests waiting to join a batch", registry=self.registry
        )
