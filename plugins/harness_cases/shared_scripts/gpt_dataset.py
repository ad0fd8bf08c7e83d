"""The PaddleNLP/FlagPerf GPT format (``*_ids.npy`` + ``*_idx.npz``) as a torch Dataset.

The window logic is the framework-neutral reader ``harness_cases/shared_scripts/gpt_windows.py``
(shared with the Paddle script, so both frameworks see the same samples); the plugin puts
that folder on the script's PYTHONPATH.
"""

from __future__ import annotations

import torch
from torch.utils.data import Dataset

from gpt_windows import GPTWindows


class GPTWindowDataset(Dataset):
    """(input, target) token windows; a window may span document boundaries, as in Megatron-LM."""

    def __init__(self, prefix: str, seq_len: int, seed: int, vocab_size: int | None = None):
        self.windows = GPTWindows(prefix, seq_len, seed, vocab_size)

    def __len__(self) -> int:
        return len(self.windows)

    def __getitem__(self, index: int):
        inputs, targets = self.windows.window(index)
        return torch.from_numpy(inputs), torch.from_numpy(targets)
