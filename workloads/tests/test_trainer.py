"""The trainer on CPU: loss falls, the log line keeps its contract, DDP matches one process, resume continues."""

import json
import os
import signal
import subprocess
import sys
import time

from conftest import ENV, LOG_LINE, TRAIN, free_port, train


def test_loss_falls_and_every_log_line_parses(tmp_path):
    lines = train("--max_steps", "60", "--batch_size", "16", "--lr", "2e-3", run_dir=tmp_path)
    assert [int(line["step"]) for line in lines] == [10, 20, 30, 40, 50, 60]
    losses = [float(line["loss"]) for line in lines]
    assert losses[-1] < losses[0] - 1.0, losses
    assert all(float(line["toks"]) > 0 and line["step_ms"] for line in lines)
    assert all(line["mfu"] is None for line in lines)  # no MFU without a GPU
    assert "note: this job was given GPUs" not in train.last_output  # none were given
    printed = [ln for ln in train.last_output.splitlines() if ln.startswith("epoch=")]
    assert all(LOG_LINE.match(ln) for ln in printed)
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["model"]["vocab_size"] == 256 and config["trained_steps"] == 60
    assert (tmp_path / "model.pt").stat().st_size > 0


def test_a_job_given_gpus_that_trains_on_the_cpu_says_so_after_its_start_line(tmp_path):
    lines = train("--max_steps", "10", "--batch_size", "4", run_dir=tmp_path, env={"SLURM_JOB_GPUS": "0"})
    printed = train.last_output.splitlines()
    assert printed[0].startswith("model=") and "device=cpu" in printed[0]
    assert printed[1].startswith("note: this job was given GPUs (SLURM_JOB_GPUS=0)")
    assert [line["step"] for line in lines] == ["10"]  # the note is no step line


def test_ddp_with_two_processes_matches_one_process_at_the_same_global_batch(tmp_path):
    ddp = train("--max_steps", "30", "--batch_size", "8", run_dir=tmp_path / "ddp", torchrun=2)
    assert "world=2" in train.last_output
    single = train("--max_steps", "30", "--batch_size", "16", run_dir=tmp_path / "one")
    for a, b in zip(ddp, single, strict=True):
        assert abs(float(a["loss"]) - float(b["loss"])) < 0.02, (a, b)


def test_checkpoint_stop_and_resume_continue_the_step_and_the_loss(tmp_path):
    first = train("--max_steps", "30", "--batch_size", "16", "--lr", "2e-3", run_dir=tmp_path)
    second = train("--max_steps", "60", "--batch_size", "16", "--lr", "2e-3", run_dir=tmp_path)
    assert "resuming from" in train.last_output and "at step 30" in train.last_output
    assert [int(line["step"]) for line in second] == [40, 50, 60]
    # The loss picks up where it stopped rather than starting again from an untrained model's.
    assert float(second[0]["loss"]) < float(first[0]["loss"]) - 0.5
    assert abs(float(second[0]["loss"]) - float(first[-1]["loss"])) < 0.6


def test_sigterm_saves_a_checkpoint_before_stopping(tmp_path):
    argv = [
        sys.executable,
        str(TRAIN),
        "--num_workers",
        "0",
        "--seq_len",
        "64",
        "--batch_size",
        "16",
        "--log_every",
        "5",
        "--epochs",
        "50",
        "--run_dir",
        str(tmp_path),
    ]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, env=ENV)
    for line in proc.stdout:
        if line.startswith("epoch="):
            break
    proc.send_signal(signal.SIGTERM)
    output = proc.communicate(timeout=60)[0]
    assert proc.returncode == 0 and "stopped by SIGTERM at step" in output
    assert (tmp_path / "checkpoint.pt").exists() and not (tmp_path / "model.pt").exists()
    started = time.monotonic()
    train("--max_steps", "1", "--epochs", "50", run_dir=tmp_path)  # resumes; already past step 1, so it stops
    assert "resuming from" in train.last_output and time.monotonic() - started < 60


def test_sigterm_to_the_whole_job_ends_with_one_line_and_a_checkpoint_not_a_traceback(tmp_path):
    """scancel and SLURM's time-limit warning signal every process of the job, data-loader workers included."""
    argv = [sys.executable, str(TRAIN), "--num_workers", "2", "--seq_len", "64", "--batch_size", "16"]
    argv += ["--log_every", "5", "--epochs", "50", "--run_dir", str(tmp_path)]
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV, start_new_session=True
    )
    for line in proc.stdout:
        if line.startswith("epoch=") and int(LOG_LINE.match(line.strip())["step"]) >= 10:
            break
    os.killpg(proc.pid, signal.SIGTERM)  # the trainer and its two workers, as SLURM does
    output, errors = proc.communicate(timeout=60)
    assert proc.returncode == 0, errors[-3000:]
    assert "Traceback" not in errors and "Error" not in errors, errors[-3000:]
    ending = [line for line in output.splitlines() if not LOG_LINE.match(line)]  # the start line was read above
    assert len(ending) == 1 and ending[0].startswith("stopped by SIGTERM at step "), output[-2000:]
    checkpoint = tmp_path / "checkpoint.pt"
    assert f"checkpoint saved to {checkpoint}" in ending[0]
    import torch

    step = torch.load(checkpoint, weights_only=False)["step"]
    assert f"at step {step} of " in ending[0] and step >= 10


def test_a_cancelled_ddp_run_ends_with_one_cancelled_line_not_torchruns_traceback(tmp_path):
    """scancel signals torchrun as well as its trainer processes; ddp_run.py is the templates' torchrun."""
    argv = [sys.executable, str(TRAIN.parent / "ddp_run.py"), "--nproc_per_node=2", f"--master_port={free_port()}"]
    argv += [str(TRAIN), "--num_workers", "0", "--seq_len", "64", "--batch_size", "8", "--log_every", "5"]
    argv += ["--epochs", "50", "--run_dir", str(tmp_path)]
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV, start_new_session=True
    )
    for line in proc.stdout:
        if line.startswith("epoch="):
            break
    os.killpg(proc.pid, signal.SIGTERM)  # torchrun and both ranks, as SLURM does
    output, errors = proc.communicate(timeout=90)
    assert proc.returncode == 0, errors[-3000:]
    assert "Traceback" not in errors and "SignalException" not in errors and "signal" not in errors, errors[-3000:]
    ending = [line for line in output.splitlines() if not LOG_LINE.match(line)]
    assert ending[0].startswith("stopped by SIGTERM at step ") and (tmp_path / "checkpoint.pt").exists()
    assert ending[1:] == [
        "cancelled (SIGTERM): torchrun stopped its trainer processes; rank 0 saved the checkpoint named above"
    ]
