"""A small decoder-only transformer over bytes (vocabulary 256): no tokenizer to download.

Attention goes through F.scaled_dot_product_attention (flash / memory-efficient kernels on a GPU).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB_SIZE = 256


@dataclass
class ModelConfig:
    n_layer: int = 2
    n_head: int = 4
    n_embd: int = 128
    block_size: int = 256
    vocab_size: int = VOCAB_SIZE
    dropout: float = 0.0

    def as_dict(self) -> dict:
        return asdict(self)


# Named sizes. "gpt2-124m" has GPT-2 small's shape (12 layers, 12 heads, 768 wide, 1024 context); with a
# 256-byte vocabulary instead of 50,257 tokens it has about 85 M parameters rather than 124 M.
SIZES = {
    "tiny": ModelConfig(n_layer=2, n_head=4, n_embd=128, block_size=256),
    "small": ModelConfig(n_layer=4, n_head=4, n_embd=256, block_size=512),
    "gpt2-124m": ModelConfig(n_layer=12, n_head=12, n_embd=768, block_size=1024),
}


class CausalSelfAttention(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        assert config.n_embd % config.n_head == 0, "n_embd must be a multiple of n_head"
        self.n_head = config.n_head
        self.qkv = nn.Linear(config.n_embd, 3 * config.n_embd)
        self.proj = nn.Linear(config.n_embd, config.n_embd)
        self.dropout = config.dropout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, length, width = x.shape
        q, k, v = self.qkv(x).split(width, dim=2)
        q, k, v = (t.view(batch, length, self.n_head, width // self.n_head).transpose(1, 2) for t in (q, k, v))
        dropout = self.dropout if self.training else 0.0
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=dropout)
        return self.proj(y.transpose(1, 2).contiguous().view(batch, length, width))


class Block(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        self.ln1 = nn.LayerNorm(config.n_embd)
        self.attn = CausalSelfAttention(config)
        self.ln2 = nn.LayerNorm(config.n_embd)
        self.mlp = nn.Sequential(
            nn.Linear(config.n_embd, 4 * config.n_embd),
            nn.GELU(approximate="tanh"),
            nn.Linear(4 * config.n_embd, config.n_embd),
            nn.Dropout(config.dropout),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class TinyLM(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        self.config = config
        self.tok_emb = nn.Embedding(config.vocab_size, config.n_embd)
        self.pos_emb = nn.Embedding(config.block_size, config.n_embd)
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.n_layer))
        self.ln_f = nn.LayerNorm(config.n_embd)
        self.head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.head.weight = self.tok_emb.weight  # tied embeddings
        self.apply(self._init_weights)
        for name, param in self.named_parameters():
            if name.endswith("proj.weight") or name.endswith("mlp.2.weight"):  # scaled residual projections
                nn.init.normal_(param, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def forward(
        self, idx: torch.Tensor, targets: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        length = idx.shape[1]
        if length > self.config.block_size:
            raise ValueError(f"sequence of {length} bytes is longer than the context of {self.config.block_size}")
        x = self.tok_emb(idx) + self.pos_emb(torch.arange(length, device=idx.device))
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln_f(x))
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)).float(), targets.view(-1))
        return logits, loss

    def flops_per_token(self, seq_len: int) -> float:
        """Training FLOPs per token (forward + backward), as in the PaLM appendix: 6N + 12·L·d·T."""
        cfg = self.config
        return 6 * self.num_parameters() + 12 * cfg.n_layer * cfg.n_embd * seq_len
