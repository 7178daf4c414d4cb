"""Telemetry parsers on recorded output, the bottleneck rules, and frames built from what the collector knows."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusters.backends.kinds.slurm.backend import expand_ids, parse_gpu_allocations, parse_nodes
from clusters.backends.slurm_family.hostlist import expand_hostlist
from telemetry.frames import FrameBuilder
from telemetry.hints import HOLD_SECONDS, HintRules, Sample
from telemetry.live import JobRef, LiveState
from telemetry.parsers import (
    parse_dcgm_vector,
    parse_iostat_json,
    parse_meminfo,
    parse_nvidia_smi_line,
    parse_trainer_line,
)

FIXTURES = Path(__file__).parent / "fixtures/telemetry"
ROWS = Path(__file__).parents[1] / "scripts/fixtures/nvidia-smi-query.csv"


def read(name: str) -> str:
    return (FIXTURES / name).read_text()


# -- parsers --------------------------------------------------------------------------------------------------------
def test_nvidia_smi_rows_parse_into_numbers_and_missing_fields_become_none():
    samples = [s for s in map(parse_nvidia_smi_line, ROWS.read_text().splitlines()) if s]
    assert len(samples) == 80 and {s.index for s in samples} == {0, 1, 2, 3}
    first = samples[0]
    assert (first.util, first.mem_used_mib, first.mem_total_mib, first.power_w, first.temp_c) == (
        93,
        61234,
        81559,
        612.87,
        64,
    )
    assert first.uuid.startswith("GPU-") and first.taken_at.year == 2026
    na = parse_nvidia_smi_line(
        "2026/11/21 09:00:00.137, 0, MIG-5f1a2c3d-0b4e-4c6f-9a7b-1c2d3e4f5a60, [N/A], [N/A], 512, 9856, [N/A], 41, 1410"
    )
    assert na.util is None and na.power_w is None and na.mem_used_mib == 512
    driver_gone = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
    assert parse_nvidia_smi_line(driver_gone) is None
    assert parse_nvidia_smi_line("") is None


def test_iostat_json_gives_cpu_and_every_disk():
    busy = parse_iostat_json(read("iostat-busy.json"))
    assert busy.cpu.iowait == 2.51 and busy.cpu.busy == pytest.approx(1.51)
    (disk,) = busy.disks
    assert (disk.device, disk.util, disk.w_await_ms, disk.write_kbs) == ("vda", 6.40, 0.34, 185504.0)
    idle = parse_iostat_json(read("iostat-idle.json"))
    assert idle.cpu.idle == 99.5 and idle.disks[0].util == 0.0
    assert parse_iostat_json('{"sysstat": {"hosts": [') is None  # iostat cut off mid-report
    assert parse_iostat_json("{}") is None  # the node has no iostat


def test_meminfo_used_is_total_minus_available():
    used, total = parse_meminfo(read("meminfo.txt"))
    assert total == 24684096 * 1024 and 0 < used < total
    assert parse_meminfo("MemTotal: 10 kB\n") is None


def test_trainer_lines_as_the_bundled_trainer_prints_them():
    point = parse_trainer_line("epoch=2 step=1500 loss=1.9876 tok/s=48211.3 step_ms=10.4 mfu=41.2")
    assert (point.epoch, point.step, point.loss, point.tokens_per_s, point.step_ms) == (2, 1500, 1.9876, 48211.3, 10.4)
    assert parse_trainer_line("epoch=0 step=1 loss=3.2 tok/s=100.0 unknown=whatever").step == 1
    # The steps the run plans, which the job page counts to (fewer than --max_steps when the epoch ends first).
    planned = parse_trainer_line("epoch=1 step=200 loss=2.3457 tok/s=12345.7 step_ms=10.4 total_steps=214 mfu=41.2")
    assert (planned.step, planned.total_steps, planned.step_ms) == (200, 214, 10.4)
    assert parse_trainer_line("epoch=0 step=1 loss=3.2 tok/s=100.0 step_ms=9.0").total_steps is None
    for line in ("loss went down", "epoch=0 step=x loss=1 tok/s=2", "epoch=0 step=1 loss=nan tok/s=2", ""):
        assert parse_trainer_line(line) is None


def test_dcgm_answer_becomes_one_entry_per_gpu_with_its_pod():
    gpus = {g.uuid: g for g in parse_dcgm_vector(read("dcgm-query.json"))}
    serving = gpus["GPU-5f1a2c3d-0b4e-4c6f-9a7b-1c2d3e4f5a60"]
    assert (serving.node, serving.index, serving.namespace, serving.pod) == (
        "gpu-node-1",
        0,
        "gpulab-hpc",
        "tinylm-server-7d9c5b6f4-x2x8q",
    )
    assert serving.values == {
        "util": 87.0,
        "engine_active": 0.842117,
        "mem_used_mib": 30512.0,
        "mem_free_mib": 50535.0,
        "power_w": 412.337,
        "temp_c": 58.0,
    }
    assert gpus["GPU-6a2b3c4d-1c5f-4d70-8b8c-2d3e4f5a6b71"].values == {"util": 0.0}  # NaN power is dropped
    assert parse_dcgm_vector('{"status":"error","error":"bad query"}') == []


def test_scontrol_details_give_each_running_jobs_gpu_indexes():
    allocations = parse_gpu_allocations(read("scontrol_show_job_d.txt"))
    assert [(a.scheduler_id, a.node, a.indexes) for a in allocations] == [("2795", "vm", (0, 1)), ("2796", "vm", (2,))]
    multi = (
        "JobId=7 JobName=x\n   JobState=RUNNING Reason=None\n"
        "     Nodes=gpu[01-02] CPU_IDs=0-7 Mem=0 GRES=gpu:a100:2(IDX:0,2)\n"
    )
    assert [(a.node, a.indexes) for a in parse_gpu_allocations(multi)] == [("gpu01", (0, 2)), ("gpu02", (0, 2))]
    assert expand_ids("0-1,3") == (0, 1, 3) and expand_ids("N/A") == ()
    assert expand_hostlist("gpu[08-10],login") == ["gpu08", "gpu09", "gpu10", "login"]
    (node,) = parse_nodes(read("scontrol_show_node.txt"))
    assert (node.name, node.address, node.gpus) == ("vm", "127.0.0.1", 4)


# -- hints ----------------------------------------------------------------------------------------------------------
def feed(rules: HintRules, seconds: int, **gpus) -> None:
    for t in range(seconds):
        rules.add(Sample(t=float(t), gpus={k: v(t) if callable(v) else v for k, v in gpus.items()}))


def codes(rules: HintRules) -> set[str]:
    return {h.code for h in rules.hints()}


def test_starvation_needs_thirty_seconds_of_full_memory_and_low_utilization():
    rules = HintRules()
    feed(rules, int(HOLD_SECONDS) - 5, g0=(15.0, 0.9))
    assert codes(rules) == set()
    feed(rules, int(HOLD_SECONDS) + 2, g0=(15.0, 0.9))
    assert codes(rules) == {"input_starvation"}
    busy = HintRules()
    feed(busy, 40, g0=(95.0, 0.9))
    assert codes(busy) == set()


def test_oscillating_utilization_reads_as_synchronization_stalls():
    rules = HintRules()
    feed(rules, 40, g0=lambda t: (95.0 if t % 4 < 2 else 5.0, 0.3))
    assert codes(rules) == {"sync_stalls"}


def test_busy_disk_with_long_waits_is_io_bound():
    rules = HintRules()
    for t in range(35):
        rules.add(Sample(t=float(t), gpus={"g0": (60.0, 0.3)}, disk_util=93.0, disk_await_ms=45.0))
    assert codes(rules) == {"io_bound"}
    fast = HintRules()
    for t in range(35):
        fast.add(Sample(t=float(t), gpus={"g0": (60.0, 0.3)}, disk_util=93.0, disk_await_ms=1.0))
    assert codes(fast) == set()


def test_one_idle_gpu_for_the_limit_raises_the_idle_hint():
    rules = HintRules(idle_seconds=300)
    feed(rules, 299, g0=(97.0, 0.6), g1=(0.0, 0.0))
    assert "gpu_idle" not in codes(rules)
    feed(rules, 310, g0=(97.0, 0.6), g1=(0.0, 0.0))
    assert "gpu_idle" in codes(rules)
    rules.add(Sample(t=311.0, gpus={"g0": (97.0, 0.6), "g1": (50.0, 0.2)}))
    assert rules.idle_seconds(311.0) == 0.0


# -- frames ---------------------------------------------------------------------------------------------------------
def live_node(state: LiveState, rows: int = 4):
    state.node(1, 1, "gpu01")
    samples = [s for s in map(parse_nvidia_smi_line, ROWS.read_text().splitlines()) if s][:rows]
    state.put_gpus(1, samples, at=1000.0)
    job = JobRef("6b3f0c2e-0000-4000-8000-000000000001", "alice", 7, 2)
    state.put_allocations(1, [(job, 1, (0, 2))])
    return job


def test_job_frames_carry_only_the_jobs_gpus_and_the_course_frame_names_the_student():
    state = LiveState()
    job = live_node(state)
    frames = FrameBuilder().build(state.take(), now=1000.5)
    gpus = frames[f"telemetry.job.{job.job_id}"]["gpus"]
    assert [(g["i"], g["util"], g["stale"]) for g in gpus] == [(0, 93, False), (2, 12, False)]
    course = frames["telemetry.course.7"]["gpus"]
    assert [r["key"] for r in course] == ["alice/6b3f0c2e/gpu01/0", "alice/6b3f0c2e/gpu01/2"]
    assert frames["telemetry.node.1"]["has_gpu"] is True and len(frames["telemetry.node.1"]["gpus"]) == 4


def test_a_silent_node_is_stale_with_no_numbers_and_frames_keep_coming():
    state = LiveState()
    job = live_node(state)
    builder = FrameBuilder()
    builder.build(state.take(), now=1000.5)
    assert builder.build(state.take(), now=1000.6) == {}  # nothing new, heartbeat not due
    frames = builder.build(state.take(), now=1010.0)  # ten seconds of silence: the heartbeat says stale
    gpu = frames[f"telemetry.job.{job.job_id}"]["gpus"][0]
    assert gpu["stale"] is True and gpu["util"] is None and gpu["power"] is None
    assert frames["telemetry.node.1"]["stale"] is True and frames["telemetry.node.1"]["gpus"][0]["util"] is None


def test_course_frames_come_once_a_second_and_name_their_gpus_only_when_the_roster_changed():
    state = LiveState()
    job = live_node(state)
    builder = FrameBuilder()
    first = builder.build(state.take(), now=1000.5)["telemetry.course.7"]
    assert [r["key"] for r in first["gpus"]] == ["alice/6b3f0c2e/gpu01/0", "alice/6b3f0c2e/gpu01/2"]
    assert first["util"] == [93, 12] and first["idle_s"] == [0, 0]
    samples = [s for s in map(parse_nvidia_smi_line, ROWS.read_text().splitlines()) if s][:4]
    state.put_gpus(1, samples, at=1000.7)  # the node's next sample: news for the job, not yet a second
    news = builder.build(state.take(), now=1000.8)
    assert f"telemetry.job.{job.job_id}" in news and "telemetry.course.7" not in news
    second = builder.build(state.take(), now=1001.5)["telemetry.course.7"]
    assert "gpus" not in second and second["roster"] == first["roster"] and len(second["util"]) == 2
    builder.not_published()  # Redis lost that tick: the next frame names the GPUs again
    assert builder.build(state.take(), now=1002.6)["telemetry.course.7"]["gpus"] == first["gpus"]


def test_a_node_without_nvidia_smi_says_so():
    state = LiveState()
    state.node(1, 1, "cpu01")
    state.set_node_status(1, "no GPU on this node (nvidia-smi not found)", has_gpu=False)
    state.put_allocations(1, [(JobRef("j1", "bob", 7, 0), 1, ())])
    frames = FrameBuilder().build(state.take(), now=5.0)
    assert frames["telemetry.job.j1"]["gpus"] == [] and frames["telemetry.job.j1"]["no_gpu"] == ["cpu01"]
    assert frames["telemetry.node.1"]["has_gpu"] is False


# -- the demo's stand-in nvidia-smi: labelled simulated, and every view of it agrees ---------------------------------
STAND_IN = Path(__file__).parents[1] / "scripts/fixtures/nvidia-smi"


def stand_in(*args: str, gpus: str = "0,3") -> str:
    import os
    import subprocess

    env = {**os.environ, "GPULAB_NVIDIA_SMI_ROWS": str(ROWS), "CUDA_VISIBLE_DEVICES": gpus}
    return subprocess.run(["bash", str(STAND_IN), *args], env=env, capture_output=True, text=True, check=True).stdout


def test_the_stand_ins_table_and_list_agree_with_the_rows_the_charts_draw():
    first = {s.index: s for s in reversed([s for s in map(parse_nvidia_smi_line, ROWS.read_text().splitlines()) if s])}
    table = stand_in()
    assert "simulated" in table.splitlines()[0] and "not measured" in table.splitlines()[0]
    for index in (0, 3):
        row = next(line for line in table.splitlines() if line.startswith(f"{index} "))
        gpu = first[index]
        assert f"{gpu.util:.0f}%" in row and f"{gpu.mem_used_mib:.0f}MiB / {gpu.mem_total_mib:.0f}MiB" in row
        assert "(simulated)" in row
    listed = stand_in("-L").splitlines()
    assert listed == [f"GPU {i}: GPU Lab demo GPU (simulated) (UUID: {first[i].uuid})" for i in (0, 3)]


def test_the_stand_in_replays_another_gpus_figures_on_a_gpu_it_is_told_to(tmp_path):
    import os
    import subprocess

    replays = tmp_path / "replays"
    replays.write_text("0=3\n3=0\n")
    env = {**os.environ, "GPULAB_NVIDIA_SMI_ROWS": str(ROWS), "GPULAB_NVIDIA_SMI_REPLAYS": str(replays)}
    query = ["bash", str(STAND_IN), "--query-gpu=timestamp,index", "--format=csv,noheader,nounits"]
    streamed = subprocess.run(query, env=env, capture_output=True, text=True, check=True).stdout
    shown = {s.index: s for s in map(parse_nvidia_smi_line, streamed.splitlines()) if s}
    rows = [s for s in map(parse_nvidia_smi_line, ROWS.read_text().splitlines()) if s]
    recorded = {s.index: s for s in reversed(rows)}  # each GPU's first row
    assert sorted(shown) == [0, 1, 2, 3]
    for gpu, source in ((0, 3), (3, 0), (1, 1), (2, 2)):
        assert shown[gpu].uuid == recorded[gpu].uuid  # still itself
        assert (shown[gpu].util, shown[gpu].mem_used_mib) == (recorded[source].util, recorded[source].mem_used_mib)
    replays.unlink()
    plain = subprocess.run(query, env=env, capture_output=True, text=True, check=True).stdout
    first_row = next(line for line in ROWS.read_text().splitlines() if not line.startswith("#"))
    assert plain.splitlines()[0].split(", ")[1:] == first_row.split(", ")[1:]  # without it: the rows as written


def test_stand_in_samples_are_simulated_on_the_wire_and_in_the_jobs_summary():
    samples = [s for s in map(parse_nvidia_smi_line, ROWS.read_text().splitlines()) if s]
    assert samples and all(s.simulated for s in samples)
    real = parse_nvidia_smi_line(
        "2026/11/21 09:00:00.137, 0, GPU-5f1a2c3d-0b4e-4c6f-9a7b-1c2d3e4f5a60, 93, 41, 61234, 81559, 612.87, 64, 1980"
    )
    assert real is not None and not real.simulated
    state = LiveState()
    job = live_node(state)
    builder = FrameBuilder()
    frames = builder.build(state.take(), now=1000.5)
    assert all(g["simulated"] is True for g in frames[f"telemetry.job.{job.job_id}"]["gpus"])
    assert all(g["simulated"] is True for g in frames["telemetry.node.1"]["gpus"])
    assert all(r["simulated"] is True for r in frames["telemetry.course.7"]["gpus"])  # the class heatmap says so too
    assert builder.usage[job.job_id].simulated is True


def test_the_collector_logs_and_shows_once_that_a_nodes_gpus_are_simulated(caplog):
    from telemetry.collector.node_stream import NodeStream, NodeTarget

    state = LiveState()
    state.node(1, 1, "gpu01")
    stream = NodeStream(state, 1, NodeTarget("127.0.0.1", 22, "", "gpu01"), None, None)
    rows: list = []
    with caplog.at_level("WARNING", logger="telemetry.collector.node_stream"):
        stream._gpu_lines(ROWS.read_text().splitlines()[:40], rows)
    said = [r.getMessage() for r in caplog.records if "simulated" in r.getMessage()]
    assert len(said) == 1 and "gpu01" in said[0] and "not measured" in said[0]
    assert "simulated" in state.nodes[1].status
