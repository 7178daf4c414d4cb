"""The trainer's parts in-process on a very small model: the step loop, its log line, stopping and resuming.

tests/test_trainer.py runs the whole script (torchrun, real SIGTERM to the process group); these call the
parts the script is made of, so a failure names the part.
"""

from __future__ import annotations

import os
import signal
from types import SimpleNamespace
from typing import cast

import distributed
import pytest
import torch
from checkpoints import CHECKPOINT
from conftest import LOG_LINE
from distributed import Dist, StopSignal
from logline import ending_line, no_cuda_line, peak_for, start_line, step_line
from loop import train_steps
from prepare import prepare
from train import parse_args, save_at_end

SMALL = ["--n_layer", "1", "--n_head", "2", "--n_embd", "32", "--seq_len", "32", "--batch_size", "8"]
SMALL += ["--num_workers", "0", "--lr", "3e-3", "--warmup_steps", "2", "--log_every", "5"]


@pytest.fixture(autouse=True)
def one_thread_and_sigterm_restored():
    """StopSignal installs a SIGTERM handler in this process; pytest gets its own back afterwards."""
    threads, handler = torch.get_num_threads(), signal.getsignal(signal.SIGTERM)
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
    signal.signal(signal.SIGTERM, handler)


class StopAfter(StopSignal):
    """SIGTERM as if it arrived during step `steps` (the loop asks once before the first step, then after each)."""

    def __init__(self, steps: int):
        super().__init__()
        self.asked, self.steps = 0, steps

    def agreed(self, env: Dist) -> bool:
        self.received = self.received or self.asked > self.steps - 1
        self.asked += 1
        return super().agreed(env)


def small_run(run_dir, *extra: str):
    return prepare(parse_args([*SMALL, "--run_dir", str(run_dir), *extra]), Dist("cpu"))


def weights(run) -> dict[str, torch.Tensor]:
    return {name: tensor.detach().clone() for name, tensor in run.model.state_dict().items()}


def test_the_step_loop_lowers_the_loss_and_prints_the_portals_line_every_k_steps(tmp_path, capsys):
    run = small_run(tmp_path, "--max_steps", "20")
    outcome = train_steps(run, StopSignal())
    lines = [LOG_LINE.match(line) for line in capsys.readouterr().out.splitlines()]
    assert all(lines) and [int(m["step"]) for m in lines] == [5, 10, 15, 20]
    assert (outcome.step, outcome.epoch, outcome.stopped) == (20, 0, False)
    assert float(lines[-1]["loss"]) == round(outcome.loss, 4) < float(lines[0]["loss"])
    assert all(m["mfu"] is None for m in lines)  # no MFU without a GPU


def test_the_step_line_counts_to_the_planned_steps_when_the_epoch_ends_before_max_steps(tmp_path, capsys):
    text = tmp_path / "small.txt"  # 3,230 bytes in 33-byte windows, 8 per batch: about a dozen steps make the epoch
    text.write_bytes(bytes(range(32, 127)) * 34)
    run = small_run(tmp_path / "run", "--max_steps", "300", "--data", str(text))
    outcome = train_steps(run, StopSignal())
    lines = [LOG_LINE.match(line) for line in capsys.readouterr().out.splitlines()]
    assert 5 < run.total_steps == outcome.step < 300
    assert {m["total_steps"] for m in lines} == {str(outcome.step)} and lines[-1]["step"] == str(outcome.step)


def test_a_sigterm_stops_the_loop_after_the_current_step(tmp_path):
    run = small_run(tmp_path, "--max_steps", "20")
    outcome = train_steps(run, StopAfter(7))
    assert (outcome.step, outcome.stopped) == (7, True)


def test_a_sigterm_that_lands_while_the_ranks_agree_stops_them_at_the_next_step(monkeypatch):
    """torchrun signals each rank once; one that arrives during the agreeing all_reduce must not be lost."""

    def all_reduce_as_the_signal_lands(flag, op):
        os.kill(os.getpid(), signal.SIGTERM)  # the handler runs here, after this rank's flag was taken

    monkeypatch.setattr(distributed.dist, "all_reduce", all_reduce_as_the_signal_lands)
    two_ranks = cast(Dist, SimpleNamespace(world=2, device=torch.device("cpu")))
    stop = StopSignal()
    assert stop.agreed(two_ranks) is False  # neither rank had it when they agreed on this step
    assert stop.agreed(two_ranks) is True


def test_a_stopped_run_resumed_ends_with_the_weights_of_a_run_never_stopped(tmp_path, capsys):
    straight = small_run(tmp_path / "straight", "--max_steps", "16")
    train_steps(straight, StopSignal())

    first = small_run(tmp_path / "stopped", "--max_steps", "16")
    stopped = train_steps(first, StopAfter(9))
    save_at_end(first, stopped)
    assert not (tmp_path / "stopped" / "model.pt").exists()
    assert "stopped by SIGTERM at step 9 of 16" in capsys.readouterr().out

    again = small_run(tmp_path / "stopped", "--max_steps", "16")
    assert (again.start_step, again.start_epoch) == (9, 0)
    finished = train_steps(again, StopSignal())
    save_at_end(again, finished)
    assert finished.step == 16 and (tmp_path / "stopped" / "model.pt").exists()
    resumed, uninterrupted = weights(again), weights(straight)
    assert all(torch.equal(resumed[name], uninterrupted[name]) for name in uninterrupted)
    assert sorted(p.name for p in (tmp_path / "stopped").iterdir()) == [CHECKPOINT, "config.json", "model.pt"]


def test_the_step_line_keeps_the_contract_with_and_without_mfu():
    plain = step_line(1, 200, 2.34567, 12345.67, 10.42, 214)
    assert plain == "epoch=1 step=200 loss=2.3457 tok/s=12345.7 step_ms=10.4 total_steps=214"
    with_mfu = LOG_LINE.match(step_line(0, 5, 1.0, 2.0, 3.0, 300, mfu=41.23))
    assert with_mfu and (with_mfu["total_steps"], with_mfu["mfu"]) == ("300", "41.2")


def test_the_ending_line_says_how_to_resume_only_when_stopped(tmp_path):
    checkpoint = tmp_path / CHECKPOINT
    assert ending_line(False, 30, 30, checkpoint) == f"done at step 30; checkpoint saved to {checkpoint}"
    assert "launch again with the same run directory to resume" in ending_line(True, 7, 30, checkpoint)


def test_tf32_lets_fp32_matmuls_use_tensor_cores_and_the_start_line_says_so(tmp_path):
    before = torch.get_float32_matmul_precision()
    try:
        plain = small_run(tmp_path / "plain", "--precision", "fp32")
        assert torch.get_float32_matmul_precision() == "highest"
        tf32 = small_run(tmp_path / "tf32", "--precision", "fp32", "--tf32")
        assert torch.get_float32_matmul_precision() == "high"
    finally:
        torch.set_float32_matmul_precision(before)
    assert "precision=fp32 " in start_line(plain.args, plain.env, 1, plain.cast, 1)
    assert "precision=fp32+tf32 " in start_line(tf32.args, tf32.env, 1, tf32.cast, 1)


def test_a_run_given_gpus_it_cannot_use_says_it_trains_on_the_cpu_and_what_that_means():
    cpu, gpu = torch.device("cpu"), torch.device("cuda", 0)
    line = no_cuda_line(cpu, {"SLURM_JOB_GPUS": "0,1", "PATH": "/usr/bin"})
    assert line and "(SLURM_JOB_GPUS=0,1)" in line and "trains on the CPU" in line
    assert "simulated" in line and "not what a GPU does" in line
    assert "NVIDIA_VISIBLE_DEVICES=GPU-1" in (no_cuda_line(cpu, {"NVIDIA_VISIBLE_DEVICES": "GPU-1"}) or "")
    assert no_cuda_line(gpu, {"SLURM_JOB_GPUS": "0"}) is None  # PyTorch uses the GPU it was given
    assert no_cuda_line(cpu, {}) is None  # a CPU job: nothing to say
    assert no_cuda_line(cpu, {"CUDA_VISIBLE_DEVICES": "", "SLURM_JOB_GPUS": "NoDevFiles"}) is None
    assert "(SLURM_GPUS_ON_NODE=2)" in (no_cuda_line(cpu, {"SLURM_GPUS_ON_NODE": "2"}) or "")  # SLURM's count alone
    assert no_cuda_line(cpu, {"SLURM_GPUS_ON_NODE": "0"}) is None
    assert "(CUDA_VISIBLE_DEVICES=0)" in (no_cuda_line(cpu, {"CUDA_VISIBLE_DEVICES": "0"}) or "")  # GPU number 0


def test_mfu_uses_the_peak_of_the_h100_variant_the_run_is_on():
    assert peak_for("NVIDIA H100 80GB HBM3") == 989e12  # SXM
    assert peak_for("NVIDIA H100 PCIe") == 756e12
    assert peak_for("NVIDIA H100 NVL") == 835e12
    assert peak_for("NVIDIA A100-SXM4-80GB") == 312e12 and peak_for("NVIDIA A10") == 125e12
    assert peak_for("Some Future GPU") is None


def test_pinned_memory_is_the_templates_choice_and_only_with_cuda(tmp_path):
    from prepare import pinned

    assert parse_args([]).pin_memory == "auto" and parse_args(["--pin_memory", "false"]).pin_memory == "false"
    cuda, cpu = torch.device("cuda"), torch.device("cpu")
    assert pinned("auto", cuda) and pinned("true", cuda) and not pinned("false", cuda)
    assert not pinned("true", cpu)  # a CPU run has no copy to overlap: the flag changes nothing there
    run = small_run(tmp_path, "--pin_memory", "true")
    assert run.loader.pin_memory is False
