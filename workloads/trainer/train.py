"""Train the byte-level tiny LM on the shipped text: one process, or DDP under torchrun (NCCL on GPUs, gloo on CPU).

Rank 0 prints, every --log_every steps, the line the portal turns into curves:
    epoch=0 step=100 loss=2.3456 tok/s=12345.6 step_ms=10.4 [mfu=41.2]
(tok/s counts every rank's tokens; mfu is percent of the GPU's peak dense bf16/fp16 FLOP/s, GPU only).
Checkpoints go to --run_dir (default runs/$SLURM_JOB_ID) every --checkpoint_minutes, at the end, and on
SIGTERM (a cancel, or SLURM's warning before a time limit); a rerun with the same --run_dir resumes from there.
SIGTERM ends the run after the current step with one line ("stopped by SIGTERM at step N …") and exit status 0:
SLURM signals every process of the job, so data-loader workers ignore it and leave the stopping to the trainer.
The end writes model.pt and config.json, which the inference server loads.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys
import time
from contextlib import nullcontext
from pathlib import Path

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

sys.path.insert(0, str(Path(__file__).resolve().parent))
from data import DEFAULT_TEXT, ByteWindows, read_bytes, split
from model import SIZES, ModelConfig, TinyLM

CHECKPOINT = "checkpoint.pt"
PRECISION_NAMES = {None: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16"}
# Peak dense bf16/fp16 tensor FLOP/s, for MFU. Other GPUs: pass --peak_tflops.
PEAK_TFLOPS = {"H200": 989.0, "H100": 989.0, "A100": 312.0, "L40S": 362.0, "A10": 125.0, "L4": 121.0, "V100": 125.0}


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
    p.add_argument("--precision", choices=["auto", "fp32", "fp16", "bf16"], default="auto")
    p.add_argument("--fp16", action="store_true", help="same as --precision fp16 (as in the seed lab)")
    p.add_argument("--compile", action="store_true", help="torch.compile the model")
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    p.add_argument("--run_dir", type=Path, default=None, help="default: runs/$SLURM_JOB_ID (or runs/local)")
    p.add_argument("--data", type=Path, default=DEFAULT_TEXT, help="a UTF-8 text file, optionally .gz")
    p.add_argument("--log_every", type=int, default=10)
    p.add_argument("--checkpoint_minutes", type=float, default=10.0)
    p.add_argument("--seed", type=int, default=1337)
    p.add_argument("--peak_tflops", type=float, default=None, help="the GPU's peak, for MFU")
    args = p.parse_args(argv)
    if args.fp16:
        args.precision = "fp16"
    if args.run_dir is None:
        args.run_dir = Path("runs") / os.environ.get("SLURM_JOB_ID", "local")
    return args


def model_config(args: argparse.Namespace) -> ModelConfig:
    base = SIZES[args.model]
    return ModelConfig(
        n_layer=args.n_layer or base.n_layer,
        n_head=args.n_head or base.n_head,
        n_embd=args.n_embd or base.n_embd,
        block_size=max(base.block_size, args.seq_len),
    )


class Dist:
    """Rank, world and device as torchrun (or nothing) set them up."""

    def __init__(self, device_arg: str):
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        self.local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        use_cuda = device_arg == "cuda" or (device_arg == "auto" and torch.cuda.is_available())
        if use_cuda:
            self.device = torch.device("cuda", self.local_rank)
            torch.cuda.set_device(self.device)
        else:
            self.device = torch.device("cpu")
        if self.world > 1:
            dist.init_process_group(backend="nccl" if use_cuda else "gloo")

    @property
    def main(self) -> bool:
        return self.rank == 0

    def mean(self, value: float) -> float:
        if self.world == 1:
            return value
        tensor = torch.tensor([value], device=self.device, dtype=torch.float64)
        dist.all_reduce(tensor)
        return tensor.item() / self.world

    def barrier(self) -> None:
        if self.world > 1:
            dist.barrier()

    def close(self) -> None:
        if self.world > 1:
            dist.destroy_process_group()


class StopSignal:
    """Set by SIGTERM; under DDP every rank stops at the same step (a rank that stopped alone would hang the rest)."""

    def __init__(self) -> None:
        self.received = False
        signal.signal(signal.SIGTERM, self._on_signal)

    def _on_signal(self, signum, frame) -> None:
        self.received = True

    def agreed(self, env: Dist) -> bool:
        if env.world == 1:
            return self.received
        flag = torch.tensor([1.0 if self.received else 0.0], device=env.device)
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        self.received = flag.item() > 0
        return self.received


def ignore_sigterm(worker_id: int) -> None:
    """Data-loader workers get SLURM's SIGTERM too; dying on it would raise in the trainer mid-step."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


def autocast_dtype(precision: str, device: torch.device) -> torch.dtype | None:
    if precision == "auto":
        precision = "bf16" if device.type == "cuda" and torch.cuda.is_bf16_supported() else "fp32"
    return {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}[precision]


def peak_flops(args: argparse.Namespace, device: torch.device) -> float | None:
    if device.type != "cuda":
        return None
    if args.peak_tflops:
        return args.peak_tflops * 1e12
    name = torch.cuda.get_device_name(device)
    return next((tf * 1e12 for key, tf in PEAK_TFLOPS.items() if key in name), None)


def learning_rate(args: argparse.Namespace, step: int, total_steps: int) -> float:
    """Linear warm-up, then cosine decay to a tenth."""
    if step < args.warmup_steps:
        return args.lr * (step + 1) / args.warmup_steps
    progress = min(1.0, (step - args.warmup_steps) / max(1, total_steps - args.warmup_steps))
    return args.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


def save_checkpoint(path: Path, model: TinyLM, optimizer, step: int, epoch: int, args) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    state = {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "step": step,
        "epoch": epoch,
        "config": model.config.as_dict(),
        "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
    }
    torch.save(state, tmp)
    os.replace(tmp, path)  # a crash mid-write never leaves a broken checkpoint


def write_final(run_dir: Path, model: TinyLM, args, step: int, loss: float | None) -> None:
    torch.save(model.state_dict(), run_dir / "model.pt")
    config = {
        "model": model.config.as_dict(),
        "trained_steps": step,
        "final_loss": loss,
        "size": args.model,
        "tokenizer": "bytes",
    }
    (run_dir / "config.json").write_text(json.dumps(config, indent=2) + "\n")


def ending_line(stopped: bool, step: int, total_steps: int, checkpoint: Path) -> str:
    if stopped:
        return (
            f"stopped by SIGTERM at step {step} of {total_steps}; checkpoint saved to {checkpoint} "
            "(launch again with the same run directory to resume)"
        )
    return f"done at step {step}; checkpoint saved to {checkpoint}"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    stop = StopSignal()  # before the slow set-up, so an early cancel also ends with a checkpoint, not a traceback
    env = Dist(args.device)
    torch.manual_seed(args.seed)
    config = model_config(args)
    model = TinyLM(config).to(env.device)
    cast = autocast_dtype(args.precision, env.device)
    use_fused = env.device.type == "cuda"
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=args.weight_decay, fused=use_fused
    )
    scaler = torch.amp.GradScaler("cuda", enabled=cast == torch.float16 and env.device.type == "cuda")

    checkpoint_path = args.run_dir / CHECKPOINT
    start_step = start_epoch = 0
    if checkpoint_path.exists():
        state = torch.load(checkpoint_path, map_location=env.device, weights_only=False)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        start_step, start_epoch = state["step"], state["epoch"]
        if env.main:
            print(f"resuming from {checkpoint_path} at step {start_step}", flush=True)

    train_text, _ = split(read_bytes(args.data))
    dataset = ByteWindows(train_text, args.seq_len)
    sampler = DistributedSampler(
        dataset, num_replicas=env.world, rank=env.rank, shuffle=True, seed=args.seed, drop_last=True
    )
    loader = DataLoader(
        dataset,
        batch_size=args.batch_size,
        sampler=sampler,
        num_workers=args.num_workers,
        pin_memory=env.device.type == "cuda",
        persistent_workers=args.num_workers > 0,
        drop_last=True,
        worker_init_fn=ignore_sigterm,
    )
    steps_per_epoch = len(loader)
    total_steps = args.epochs * steps_per_epoch
    if args.max_steps:
        total_steps = min(total_steps, args.max_steps)

    train_model = torch.compile(model) if args.compile else model
    if env.world > 1:
        train_model = DistributedDataParallel(train_model, device_ids=[env.local_rank] if use_fused else None)
    peak = peak_flops(args, env.device)
    if env.main:
        print(
            f"model={args.model} params={model.num_parameters() / 1e6:.2f}M world={env.world} "
            f"device={env.device.type} precision={PRECISION_NAMES[cast]} batch={args.batch_size} "
            f"seq_len={args.seq_len} steps={total_steps} run_dir={args.run_dir}",
            flush=True,
        )

    stop_requested = stop.agreed(env)
    step, epoch, loss_value = start_step, start_epoch, None
    last_checkpoint = time.monotonic()
    interval_start, interval_steps, interval_loss = time.monotonic(), 0, 0.0
    tokens_per_step = args.batch_size * args.seq_len * env.world
    train_model.train()
    while epoch < args.epochs and step < total_steps and not stop_requested:
        sampler.set_epoch(epoch)
        for index, (x, y) in enumerate(loader):
            if epoch * steps_per_epoch + index < step:
                continue  # already trained before the resume
            x = x.to(env.device, non_blocking=True)
            y = y.to(env.device, non_blocking=True)
            for group in optimizer.param_groups:
                group["lr"] = learning_rate(args, step, total_steps)
            context = torch.autocast(env.device.type, dtype=cast) if cast else nullcontext()
            with context:
                _, loss = train_model(x, y)
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.grad_clip)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad(set_to_none=True)
            step += 1
            interval_steps += 1
            interval_loss += loss.item()
            if step % args.log_every == 0 or step == total_steps:
                if env.device.type == "cuda":
                    torch.cuda.synchronize()
                elapsed = time.monotonic() - interval_start
                loss_value = env.mean(interval_loss / interval_steps)
                tok_s = tokens_per_step * interval_steps / elapsed
                line = f"epoch={epoch} step={step} loss={loss_value:.4f} tok/s={tok_s:.1f} "
                line += f"step_ms={1000 * elapsed / interval_steps:.1f}"
                if peak:
                    line += f" mfu={100 * model.flops_per_token(args.seq_len) * tok_s / env.world / peak:.1f}"
                if env.main:
                    print(line, flush=True)
                interval_start, interval_steps, interval_loss = time.monotonic(), 0, 0.0
            if time.monotonic() - last_checkpoint >= args.checkpoint_minutes * 60:
                if env.main:
                    save_checkpoint(checkpoint_path, model, optimizer, step, epoch, args)
                env.barrier()
                last_checkpoint = time.monotonic()
            stop_requested = stop.agreed(env)
            if step >= total_steps or stop_requested:
                break
        else:
            epoch += 1

    if env.main:
        save_checkpoint(checkpoint_path, model, optimizer, step, epoch, args)
        if not stop_requested:
            write_final(args.run_dir, model, args, step, loss_value)
        print(ending_line(stop_requested, step, total_steps, checkpoint_path), flush=True)
    env.barrier()
    env.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
