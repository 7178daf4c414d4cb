"""Each kind names the collector's source that measures its clusters; the readers live with the collector."""

import threading

import pytest

from clusters import kinds
from clusters.models import Cluster
from telemetry.collector import run
from telemetry.collector.batch_source import NodesOverSshSource
from telemetry.collector.kubernetes_source import MetricsApiSource


@pytest.mark.parametrize("kind", ["slurm", "slurm-rest", "kubernetes"])
def test_every_built_in_kind_names_a_source_the_collector_has(kind):
    expected = MetricsApiSource if kind == "kubernetes" else NodesOverSshSource
    assert run.SOURCES[kinds.kind_of(kind).telemetry_source] is expected


def test_the_collector_starts_the_source_the_kind_names_and_none_for_a_kind_without_one(db, monkeypatch):
    started = []
    monkeypatch.setattr(threading.Thread, "start", lambda self: started.append(type(self)))
    slurm = Cluster.objects.create(name="s", host="127.0.0.1", kind="slurm")
    k8s = Cluster.objects.create(name="k", host="https://127.0.0.1:6443", kind="kubernetes")
    monkeypatch.setattr(type(kinds.kind_of("kubernetes")), "telemetry_source", "")
    collector = run.Collector()
    collector.log_source = object()  # the log reader is not what this test follows
    collector.start_sources()
    assert started == [NodesOverSshSource] and list(collector.sources) == [slurm.pk] and k8s.pk not in collector.sources
