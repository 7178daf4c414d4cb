"""The shipped text as fixed-length byte windows, for a DataLoader (with a DistributedSampler under DDP)."""

from __future__ import annotations

import gzip
from pathlib import Path

import torch
from torch.utils.data import Dataset

DEFAULT_TEXT = Path(__file__).resolve().parent / "data" / "kjv.txt.gz"


def read_bytes(path: Path) -> bytes:
    raw = path.read_bytes()
    return gzip.decompress(raw) if path.suffix == ".gz" else raw


class ByteWindows(Dataset):
    """Non-overlapping windows of seq_len + 1 bytes; item i is (input, target shifted by one)."""

    def __init__(self, data: bytes, seq_len: int):
        if len(data) < seq_len + 2:
            raise ValueError(f"the text has {len(data)} bytes, too few for windows of {seq_len}")
        self.data = torch.frombuffer(bytearray(data), dtype=torch.uint8)
        self.seq_len = seq_len

    def __len__(self) -> int:
        return (len(self.data) - 1) // self.seq_len

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        start = index * self.seq_len
        chunk = self.data[start : start + self.seq_len + 1].long()
        return chunk[:-1], chunk[1:]


def split(data: bytes, holdout: float = 0.05) -> tuple[bytes, bytes]:
    """Training and validation text: the last `holdout` of the file is kept for validation."""
    cut = int(len(data) * (1 - holdout))
    return data[:cut], data[cut:]
