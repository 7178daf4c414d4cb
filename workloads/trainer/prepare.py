"""Set-up: everything one run needs, built from the options in an order that must not change.

The order is part of the result: the seed is set before the model's weights are drawn, the optimizer exists
before a checkpoint's state is loaded into it, and DDP wraps the model last (it copies rank 0's weights to the
others), so a run, a resumed run and a DDP run start from the same numbers.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import torch
from checkpoints import CHECKPOINT, resume
from data import ByteWindows, read_bytes, split
from distributed import Dist, ignore_sigterm
from model import SIZES, ModelConfig, TinyLM
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


@dataclass
class Run:
    args: argparse.Namespace
    env: Dist
    model: TinyLM  # the plain module: what is saved, clipped and measured
    train_model: torch.nn.Module  # what the steps call: the model, compiled and/or wrapped in DDP
    optimizer: torch.optim.Optimizer
    scaler: torch.amp.GradScaler
    cast: torch.dtype | None  # autocast's dtype; None is full fp32
    sampler: DistributedSampler
    loader: DataLoader
    total_steps: int
    start_step: int
    start_epoch: int

    @property
    def checkpoint_path(self) -> Path:
        return self.args.run_dir / CHECKPOINT

    @property
    def steps_per_epoch(self) -> int:
        return len(self.loader)


def prepare(args: argparse.Namespace, env: Dist) -> Run:
    torch.manual_seed(args.seed)
    if args.tf32:  # fp32 work (full fp32, and what autocast leaves in fp32) may use TF32 tensor cores
        torch.set_float32_matmul_precision("high")
    model = TinyLM(model_config(args)).to(env.device)
    cast = autocast_dtype(args.precision, env.device)
    use_fused = env.device.type == "cuda"
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=args.weight_decay, fused=use_fused
    )
    scaler = torch.amp.GradScaler("cuda", enabled=cast == torch.float16 and env.device.type == "cuda")
    start_step, start_epoch = resume(args.run_dir / CHECKPOINT, model, optimizer, env)
    sampler, loader = data(args, env)
    total_steps = args.epochs * len(loader)
    if args.max_steps:
        total_steps = min(total_steps, args.max_steps)
    train_model = torch.compile(model) if args.compile else model
    if env.world > 1:
        train_model = DistributedDataParallel(train_model, device_ids=[env.local_rank] if use_fused else None)
    return Run(
        args, env, model, train_model, optimizer, scaler, cast, sampler, loader, total_steps, start_step, start_epoch
    )


def model_config(args: argparse.Namespace) -> ModelConfig:
    base = SIZES[args.model]
    return ModelConfig(
        n_layer=args.n_layer or base.n_layer,
        n_head=args.n_head or base.n_head,
        n_embd=args.n_embd or base.n_embd,
        block_size=max(base.block_size, args.seq_len),
    )


def autocast_dtype(precision: str, device: torch.device) -> torch.dtype | None:
    if precision == "auto":
        precision = "bf16" if device.type == "cuda" and torch.cuda.is_bf16_supported() else "fp32"
    return {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}[precision]


def pinned(choice: str, device: torch.device) -> bool:
    """Whether batches go in page-locked memory: only with CUDA (there is nothing to overlap on a CPU), unless off."""
    return device.type == "cuda" and choice != "false"


def data(args: argparse.Namespace, env: Dist) -> tuple[DistributedSampler, DataLoader]:
    """The training text in windows, each rank reading its own share, shuffled anew every epoch."""
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
        pin_memory=pinned(args.pin_memory, env.device),
        persistent_workers=args.num_workers > 0,
        drop_last=True,
        worker_init_fn=ignore_sigterm,
    )
    return sampler, loader
