"""Chart series: frames read through the one chart table, history downsampled, series stored in chunks and merged."""

from __future__ import annotations

import pytest

from telemetry import series
from telemetry.frames import FrameBuilder
from telemetry.live import JobRef, LiveState
from telemetry.parsers import GpuSample
from telemetry.recorder import SeriesRecorder, stored
from telemetry.templatetags.telemetry_charts import chart_boxes, prints_training_metrics

T0 = 1_700_000_000.0  # a tick time, seconds


def node_frame(t_ms: int, util: float | None = 50.0) -> dict:
    return {
        "kind": "node",
        "node": "gpu01",
        "t": t_ms,
        "gpus": [{"key": "gpu01/0", "label": "GPU 0 · free", "util": util, "mem_used": 10, "power": 70, "temp": 40}],
        "cpu": {"busy": 12.5},
        "mem": {"used": 2 * 2**30, "total": 8 * 2**30},
        "disks": [{"dev": "sda", "util": 3.0, "r_await": 1.0, "w_await": 4.0}],
    }


def job_frame(gpus: int = 2, util: float = 90.0, trainer=()) -> dict:
    return {
        "kind": "job",
        "gpus": [
            {"key": f"n1/{i}", "label": f"GPU {i} · n1", "util": util, "mem_used": 1.0, "power": 100.0, "temp": 50.0}
            for i in range(gpus)
        ],
        "hosts": [{"node": "n1", "cpu": {"busy": 40.0}, "mem": {"used": 2**30}, "disks": []}],
        "trainer": list(trainer),
    }


def test_every_chart_reads_its_numbers_through_the_chart_table():
    got = {(chart, key): (name, y) for chart, key, name, _, y in series.points(node_frame(1000))}
    assert got[("gpu-util", "gpu01/0")] == ("GPU 0 · free", 50.0)
    assert got[("cpu", "gpu01")] == ("gpu01", 12.5)
    assert got[("mem", "gpu01")] == ("gpu01", pytest.approx(2.0))  # GiB
    assert got[("disk-await", "gpu01/sda")] == ("gpu01 sda", 4.0)  # the larger of read and write
    trainer = list(series.points({"t": 5, "trainer": [{"step": 10, "loss": 2.5, "tok_s": 900.0}]}))
    assert ("loss", "loss", "loss", 10, 2.5) in trainer and ("tokens", "tok", "tok/s", 10, 900.0) in trainer


def test_history_is_at_most_600_points_per_trace_and_keeps_the_peaks():
    x = list(range(3600))
    y = [1.0] * 3600
    y[1234] = 99.0  # one spike in an hour
    dx, dy = series.downsample(x, y)
    assert len(dx) <= series.MAX_POINTS and 99.0 in dy and dx == sorted(dx)


def test_a_stretch_without_samples_stays_a_break_in_the_line():
    _, y = series.with_gaps([0, 1000, 60_000, 61_000], [1.0, 2.0, 3.0, 4.0])
    assert y == [1.0, 2.0, None, 3.0, 4.0]
    _, dy = series.downsample(list(range(2000)), [None if i % 500 == 0 else 1.0 for i in range(2000)])
    assert None in dy


def test_the_series_message_is_columnar_with_the_table_and_trainer_points_by_step():
    data: series.Series = {}
    series.add_frames(data, [{**job_frame(), "t": 1000 * i} for i in range(1, 4)])
    series.add_frames(data, [{"trainer": [{"step": s, "loss": 1.0, "tok_s": 5.0} for s in (20, 10, 20)]}])
    message = series.message(data, recorded=True)
    util = message["charts"]["gpu-util"]
    assert [t["key"] for t in util] == ["n1/0", "n1/1"] and util[0]["x"] == [1000, 2000, 3000]
    assert message["charts"]["loss"][0]["x"] == [10, 20]  # once per step, in step order
    assert message["recorded"] is True and message["spec"] is series.CHARTS


def test_a_node_chart_names_the_job_on_each_gpu():
    state = LiveState()
    state.node(1, 1, "gpu01")
    state.put_gpus(1, [GpuSample(i, f"u{i}", 50.0, 1.0, 1.0, 2.0, 3.0, 4.0, 5.0) for i in range(3)], at=T0)
    state.put_allocations(1, [(JobRef("job-a", "student2", 7, 1, "Tiny LM"), 1, (1,))])
    gpus = FrameBuilder().build(state.take(), now=T0 + 0.5)["telemetry.node.1"]["gpus"]
    assert [g["label"] for g in gpus] == ["GPU 0 · free", "GPU 1 · student2's Tiny LM", "GPU 2 · free"]
    assert gpus[1]["job"] == "job-a"


def test_loss_charts_only_for_templates_that_print_training_metrics(sleep_template, make_user):
    from jobs.models import Job, JobTemplate

    trainer = JobTemplate(body="python ~/lab/trainer/train.py --max_steps {{ steps }}\n")
    assert prints_training_metrics(Job(template=trainer)) is True
    assert prints_training_metrics(Job(template=sleep_template)) is False
    assert "loss" not in dict(chart_boxes(False)) and "loss" in dict(chart_boxes(True))
    from jobs.builtin import builtin_definitions

    trains = {d["slug"] for d in builtin_definitions() if prints_training_metrics(Job(template=JobTemplate(**d)))}
    assert trains == {"tiny-lm-single", "tiny-lm-ddp", "k8s-tinylm-train", "k8s-ray-finetune"}


@pytest.mark.django_db
def test_the_recorder_stores_ten_second_buckets_in_one_row_per_job_per_flush(
    make_job, alice, django_assert_num_queries
):
    from telemetry.models import SeriesChunk

    job = make_job(alice)
    recorder = SeriesRecorder()
    group = f"telemetry.job.{job.pk}"
    for second in range(60):  # one frame a second for a minute; utilization 0..59
        point = [{"step": second, "loss": 3.0, "tok_s": 10.0}] if second % 10 == 0 else []
        recorder.add({group: job_frame(util=float(second), trainer=point)}, T0 + second)
    with django_assert_num_queries(5):  # owners known (jobs, nodes), savepoint, one insert, release
        assert recorder.flush(T0 + 60) == 1
    chunk = SeriesChunk.objects.get(job=job)
    util = chunk.series["gpu-util"]["n1/0"]
    assert len(util["y"]) == 6 and util["y"][0] == pytest.approx(4.5)  # the mean of the first bucket's samples
    assert util["lo"][0] == 0.0 and util["hi"][0] == 9.0
    assert chunk.series["loss"]["loss"]["x"] == [0, 10, 20, 30, 40, 50]  # every trainer point
    assert recorder.flush(T0 + 61) == 0  # nothing new: no row


@pytest.mark.django_db
def test_stored_series_and_the_rings_newer_frames_make_one_history(make_job, alice):
    job = make_job(alice)
    recorder = SeriesRecorder()
    group = f"telemetry.job.{job.pk}"
    frames = []
    for second in range(120):
        frame = job_frame(util=50.0)
        recorder.add({group: frame}, T0 + second)
        frames.append({**frame, "t": int((T0 + second) * 1000)})
        if second == 95:
            recorder.flush(T0 + second)  # stores the buckets up to 90 s; 90-95 s stays open
    data, end = stored(job=job)
    assert end == int((T0 + 90) * 1000)
    series.add_frames(data, frames, after_ms=end)
    x = series.message(data)["charts"]["gpu-util"][0]["x"]
    assert x == sorted(x) and len(x) == len(set(x))  # no overlap between stored buckets and ring frames
    assert x[0] < int(T0 * 1000) + 10_000 and x[-1] == frames[-1]["t"]  # from the first bucket to the newest frame


@pytest.mark.django_db
def test_a_stopping_collector_stores_its_open_buckets(make_job, alice):
    from telemetry.models import SeriesChunk

    job = make_job(alice)
    recorder = SeriesRecorder()
    recorder.add({f"telemetry.job.{job.pk}": job_frame()}, T0 + 3)
    recorder.flush(T0 + 4, closing=True)
    assert SeriesChunk.objects.get(job=job).series["gpu-util"]["n1/0"]["y"] == [90.0]


def held_frame(t_ms: int, holder: str) -> dict:
    return {"kind": "node", "node": "gpu01", "t": t_ms,
            "gpus": [{"key": "gpu01/0", "label": f"GPU 0 · {holder}", "util": 50.0, "mem_used": 1, "power": 70,
                      "temp": 40}]}  # fmt: skip


def test_a_nodes_history_labels_each_stretch_by_the_job_that_held_the_gpu_then():
    """alice's job held GPU 0 for the first minute, bob's since: the first minute is not called bob's."""
    data: series.Series = {}
    series.add_frames(data, [held_frame(1000 * i, "alice's Tiny LM") for i in range(1, 61)])
    series.add_frames(data, [held_frame(1000 * i, "bob's Tiny LM") for i in range(61, 121)])
    util = series.message(data)["charts"]["gpu-util"]
    assert [(t["name"], t["x"][0], t["x"][-1]) for t in util] == [
        ("GPU 0 · bob's Tiny LM", 61_000, 120_000),  # the GPU's key: live points carry on from it
        ("GPU 0 · alice's Tiny LM", 1000, 60_000),
    ]
    assert util[0]["key"] == "gpu01/0" and util[1]["key"] == "gpu01/0@1000"


def test_stored_node_series_keep_each_holder_on_its_own_stretch():
    recorder = SeriesRecorder(flush_seconds=3600)
    for i in range(1, 121):
        holder = "alice's Tiny LM" if i <= 60 else "bob's Tiny LM"
        frame = held_frame(0, holder)
        recorder.add({"telemetry.node.1": frame}, now=T0 + i)
    pending = recorder.pending[("node", "1")]["gpu-util"]
    names = {key: trace["name"] for key, trace in pending.items()}
    assert names["gpu01/0"] == "GPU 0 · bob's Tiny LM"
    assert [n for k, n in names.items() if k.startswith("gpu01/0@")] == ["GPU 0 · alice's Tiny LM"]
    data: series.Series = {}
    series.add_stored(data, {chart: dict(traces) for chart, traces in recorder.pending[("node", "1")].items()})
    merged = {t["name"]: t for t in series.message(data)["charts"]["gpu-util"]}
    alice, bob = merged["GPU 0 · alice's Tiny LM"], merged["GPU 0 · bob's Tiny LM"]
    assert max(x for x in alice["x"] if x is not None) <= min(x for x in bob["x"] if x is not None)  # one shared bucket
