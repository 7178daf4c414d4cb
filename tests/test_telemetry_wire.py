"""The telemetry wire records: the keys the pages read, nulls for unknown numbers, and every key documented."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

from telemetry.parsers import CpuSample, DcgmGpu, DiskSample, GpuSample, HostSample
from telemetry.wire import (
    NO_NUMBERS,
    CourseFrame,
    CourseRow,
    GpuNumbers,
    GpuRow,
    HostRow,
    JobFrame,
    NodeFrame,
    PodUsage,
    TrainerRow,
)

DOC = Path(__file__).resolve().parents[1] / "docs/telemetry-wire.md"
NUMBERS = ("util", "mem_util", "mem_used", "mem_total", "power", "temp", "clock")
SAMPLE = GpuSample(1, "GPU-x", 87.0, 40.0, 1200.0, 81559.0, 310.5, 64.0, 1980.0)
HOST = HostSample(CpuSample(40.0, 1.5, 58.5), (DiskSample("nvme0n1", 12.0, 0.4, 2.5, 10.0, 20.0),))


def gpu_row(**kw) -> GpuRow:
    return GpuRow(**{"node": "gpu07", "index": 1, "label": "GPU 1 · gpu07", "stale": False,
                     "numbers": GpuNumbers.from_sample(SAMPLE), **kw})  # fmt: skip


def test_a_gpu_row_carries_its_key_legend_and_every_number_the_charts_read():
    wire = gpu_row().to_wire()
    assert wire == {"key": "gpu07/1", "node": "gpu07", "i": 1, "label": "GPU 1 · gpu07", "stale": False,
                    "util": 87.0, "mem_util": 40.0, "mem_used": 1200.0, "mem_total": 81559.0, "power": 310.5,
                    "temp": 64.0, "clock": 1980.0, "simulated": False}  # fmt: skip


def test_only_a_node_page_row_says_which_job_holds_the_gpu_and_null_when_free():
    assert "job" not in gpu_row().to_wire()
    assert gpu_row(holder="abc", on_node_page=True).to_wire()["job"] == "abc"
    assert gpu_row(on_node_page=True).to_wire()["job"] is None


def test_a_stale_or_missing_gpu_sends_nulls_never_zeros():
    wire = gpu_row(stale=True, numbers=NO_NUMBERS).to_wire()
    assert wire["stale"] is True and all(wire[k] is None for k in NUMBERS)
    assert GpuNumbers.from_sample(None) == NO_NUMBERS


def test_dcgm_numbers_read_engine_activity_as_percent_and_add_up_memory():
    gpu = DcgmGpu("kn1", 0, "U", "ns", "pod", {"engine_active": 0.423, "mem_used_mib": 100.0, "mem_free_mib": 900.0})
    numbers = GpuNumbers.from_dcgm(gpu)
    assert (numbers.util, numbers.mem_total, numbers.memory_fraction) == (42.3, 1000.0, 0.1)
    assert numbers.to_wire()["clock"] is None and numbers.to_wire()["power"] is None


def test_a_host_row_has_cpu_memory_and_disks_and_nothing_when_stale():
    wire = HostRow.of("gpu07", False, HOST, (2**30, 2**34)).to_wire()
    assert wire == {"node": "gpu07", "stale": False, "cpu": {"busy": 40.0, "iowait": 1.5},
                    "mem": {"used": 2**30, "total": 2**34},
                    "disks": [{"dev": "nvme0n1", "util": 12.0, "r_await": 0.4, "w_await": 2.5}]}  # fmt: skip
    assert HostRow.of("gpu07", True, HOST, (1, 2)).to_wire() == {
        "node": "gpu07", "stale": True, "cpu": None, "mem": None, "disks": []
    }  # fmt: skip


def test_a_node_frame_is_its_host_row_plus_status_and_gpus_with_usage_only_on_kubernetes():
    host = HostRow.of("gpu07", False, HOST, None)
    frame = NodeFrame("streaming", True, [gpu_row()], host, 1_700_000_000_000).to_wire()
    assert frame["kind"] == "node" and frame["node"] == "gpu07" and frame["mem"] is None
    assert frame["gpus"][0]["key"] == "gpu07/1" and frame["st"] == 1_700_000_000_000 and "usage" not in frame
    metrics = NodeFrame("metrics", False, [], host, None, PodUsage(1500.0, 2**30), reports_usage=True).to_wire()
    assert metrics["usage"] == {"cpu_millis": 1500.0, "mem_bytes": 2**30}
    assert NodeFrame("metrics", False, [], host, None, None, reports_usage=True).to_wire()["usage"] is None


def test_a_job_frame_carries_trainer_points_hints_and_pods_only_on_kubernetes():
    hints = [{"code": "idle", "title": "t", "advice": "a"}]
    frame = JobFrame([gpu_row()], [HostRow.of("gpu07", False, HOST, None)], [], None,
                     [TrainerRow(1, 500, 2.25, 12000.0)], hints, 30)  # fmt: skip
    wire = frame.to_wire()
    assert wire["kind"] == "job" and wire["trainer"] == [{"epoch": 1, "step": 500, "loss": 2.25, "tok_s": 12000.0}]
    assert wire["hosts"][0]["cpu"]["busy"] == 40.0 and wire["idle_s"] == 30 and "pod" not in wire
    with_pod = JobFrame([], [], ["kn1"], None, [], [], 0, PodUsage(250.0, 2**29)).to_wire()
    assert with_pod["pod"] == {"cpu_millis": 250.0, "mem_bytes": 2**29} and with_pod["no_gpu"] == ["kn1"]


def test_course_rows_are_keyed_by_student_job_and_gpu_and_sent_in_key_order():
    rows = [CourseRow("zoe", "f" * 32, "gpu01/0", 5.0, 10.0, False, 120),
            CourseRow("ada", "a1b2c3d4e5", "gpu02/1", None, None, True, 0)]  # fmt: skip
    wire = CourseFrame(rows, None).to_wire()
    assert [r["key"] for r in wire["gpus"]] == ["ada/a1b2c3d4/gpu02/1", "zoe/ffffffff/gpu01/0"]
    assert wire["gpus"][0] == {"key": "ada/a1b2c3d4/gpu02/1", "job": "a1b2c3d4e5", "student": "ada", "simulated": False}
    # One number per GPU, in the roster's order; a stale GPU's are null, never zero.
    assert (wire["util"], wire["mem"], wire["idle_s"]) == ([None, 5.0], [None, 10.0], [0, 120])


def test_a_course_frame_names_its_roster_and_carries_the_entries_only_when_asked():
    rows = [CourseRow("ada", "a1", "gpu02/1", 33.333333, 1.0, False, 0)]
    frame = CourseFrame(rows, 5)
    lean = frame.to_wire(with_roster=False)
    assert "gpus" not in lean and lean["roster"] == frame.to_wire()["roster"] and lean["util"] == [33.3]
    moved = CourseFrame([CourseRow("ada", "a1", "gpu02/1", 90.0, 2.0, False, 30)], 6)
    assert moved.roster == frame.roster  # the same GPUs: the same roster, whatever their numbers
    other = CourseFrame([*rows, CourseRow("bob", "b1", "gpu02/0", 1.0, 1.0, False, 0)], 5)
    assert other.roster != frame.roster
    many = [
        CourseRow(f"student{i:02d}", str(uuid.uuid4()), f"gpu{i:02d}/{i % 8}", 50.0, 20.0, False, 0) for i in range(100)
    ]
    sizes = [len(json.dumps(CourseFrame(many, 5).to_wire(with_roster=w), separators=(",", ":"))) for w in (False, True)]
    assert sizes[0] < sizes[1] / 4, sizes  # a second of a class without its roster


def test_every_key_a_record_writes_is_documented_next_to_the_javascript():
    documented = {word for span in re.findall(r"`([^`]+)`", DOC.read_text()) for word in re.findall(r"\w+", span)}
    host = HostRow.of("n", False, HOST, (1, 2))
    wires = [
        gpu_row(on_node_page=True).to_wire(),
        host.to_wire(),
        *host.to_wire()["disks"],
        NodeFrame("s", True, [], host, 1, PodUsage(1, 2), reports_usage=True).to_wire(),
        JobFrame([], [], [], 1, [TrainerRow(0, 1, 1.0, 1.0)], [], 0, PodUsage(1, 2)).to_wire(),
        TrainerRow(0, 1, 1.0, 1.0).to_wire(),
        CourseFrame([], 1).to_wire(),
        CourseRow("s", "j", "n/0", 1.0, 1.0, False, 0).to_wire(),
    ]
    keys = {key for wire in wires for key in wire}
    assert keys - documented == set(), "document these keys in docs/telemetry-wire.md"
