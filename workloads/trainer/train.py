"""Train the byte-level tiny LM on the shipped text: one process, or DDP under torchrun (NCCL on GPUs, gloo on CPU).

Rank 0 prints, every --log_every steps, the line the portal turns into curves:
    epoch=0 step=100 loss=2.3456 tok/s=12345.6 step_ms=10.4 [mfu=41.2]
(tok/s counts every rank's tokens; mfu is percent of the GPU's peak dense bf16/fp16 FLOP/s, GPU only).
Checkpoints go to --run_dir (default runs/$SLURM_JOB_ID) every --checkpoint_minutes, at the end, and on
SIGTERM (a cancel, or SLURM's warning before a time limit); a rerun with the same --run_dir resumes from there.
SIGTERM ends the run after the current step with one line ("stopped by SIGTERM at step N …") and exit status 0:
SLURM signals every process of the job, so data-loader workers ignore it and leave the stopping to the trainer.
The end writes model.pt and config.json, which the inference server loads.

Reading on, in the order a run goes: `prepare.py` (set-up: processes, model, optimizer, data, resume),
`loop.py` (the step loop), `logline.py` (the printed lines, the step line above all), `checkpoints.py` (saving);
`distributed.py` (ranks and the agreed stop), `model.py`, `data.py`.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from checkpoints import save_checkpoint, write_final
from data import DEFAULT_TEXT
from distributed import Dist, StopSignal
from logline import ending_line, no_cuda_line, start_line
from loop import Outcome, train_steps
from model import SIZES
from prepare import Run, prepare


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", choices=sorted(SIZES), default="tiny")
    p.add_argument("--n_layer", type=int, help="override the size's number of layers")
    p.add_argument("--n_head", type=int, help="override the size's number of heads")
    p.add_argument("--n_embd", type=int, help="override the size's width")
    p.add_argument("--batch_size", type=int, default=32, help="sequences per step per process")
    p.add_argument("--seq_len", type=int, default=128)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--max_steps", type=int, default=0, help="stop after this many steps in all (0: no limit)")
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--warmup_steps", type=int, default=20)
    p.add_argument("--weight_decay", type=float, default=0.1)
    p.add_argument("--grad_clip", type=float, default=1.0)
    p.add_argument("--num_workers", type=int, default=2)
    p.add_argument(
        "--pin_memory",
        choices=["auto", "true", "false"],
        default="auto",
        help="page-locked host memory for batches, so copies to the GPU overlap compute (auto: on with CUDA)",
    )
    p.add_argument("--precision", choices=["auto", "fp32", "fp16", "bf16"], default="auto")
    p.add_argument("--fp16", action="store_true", help="same as --precision fp16 (as in the seed lab)")
    p.add_argument("--compile", action="store_true", help="torch.compile the model")
    p.add_argument("--tf32", action="store_true", help="fp32 matmuls on TensorFloat-32 tensor cores (Ampere and newer)")
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    p.add_argument("--run_dir", type=Path, default=None, help="default: runs/$SLURM_JOB_ID (or runs/local)")
    p.add_argument("--data", type=Path, default=None, help="a UTF-8 text file, optionally .gz (default: bundled)")
    p.add_argument("--data_dir", type=Path, default=None, help="where a relative --data is (the student's own files)")
    p.add_argument("--log_every", type=int, default=10)
    p.add_argument("--checkpoint_minutes", type=float, default=10.0)
    p.add_argument("--seed", type=int, default=1337)
    p.add_argument("--peak_tflops", type=float, default=None, help="the GPU's peak, for MFU")
    args = p.parse_args(argv)
    if args.fp16:
        args.precision = "fp16"
    if args.run_dir is None:
        args.run_dir = Path("runs") / os.environ.get("SLURM_JOB_ID", "local")
    if args.data is None or str(args.data) == ".":  # `--data ""`: a template's empty choice
        args.data = DEFAULT_TEXT
    elif args.data_dir is not None and not args.data.is_absolute():
        args.data = args.data_dir / args.data
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    stop = StopSignal()  # before the slow set-up, so an early cancel also ends with a checkpoint, not a traceback
    env = Dist(args.device)
    run = prepare(args, env)
    if env.main:
        print(start_line(args, env, run.model.num_parameters(), run.cast, run.total_steps), flush=True)
        if note := no_cuda_line(env.device, os.environ):
            print(note, flush=True)
    outcome = train_steps(run, stop)
    if env.main:
        save_at_end(run, outcome)
    env.barrier()
    env.close()
    return 0


def save_at_end(run: Run, outcome: Outcome) -> None:
    """The checkpoint always; model.pt and config.json only for a finished run; then the line saying which."""
    save_checkpoint(run.checkpoint_path, run.model, run.optimizer, outcome.step, outcome.epoch, run.args)
    if not outcome.stopped:
        write_final(run.args.run_dir, run.model, run.args, outcome.step, outcome.loss)
    print(ending_line(outcome.stopped, outcome.step, run.total_steps, run.checkpoint_path), flush=True)


if __name__ == "__main__":
    sys.exit(main())
