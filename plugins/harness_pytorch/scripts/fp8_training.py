"""``--precision fp8``: PyTorch-native float8 training of the GPT's linear layers (torchao).

Tensorwise scaling (one scale per tensor, computed on the fly): the matrix products of every
block run on the fp8 tensor cores with bf16 autocast around them; the output head stays bf16
(its weight is tied to the embedding, and the loss over 50k classes is sensitive to it).
torchao's float8 needs ``torch.compile`` to fuse the scaling and casting into few kernels.
"""

from __future__ import annotations

import torch


def convert_linears_to_float8(model: torch.nn.Module) -> int:
    """Swap the block linears for torchao Float8Linear in place; returns how many were swapped."""
    from torchao.float8 import Float8LinearConfig, convert_to_float8_training

    swapped = []

    def eligible(module: torch.nn.Module, fqn: str) -> bool:
        # fp8 GEMMs need both dimensions divisible by 16; the tied output head stays bf16.
        ok = (isinstance(module, torch.nn.Linear) and fqn.startswith("blocks.")
              and module.in_features % 16 == 0 and module.out_features % 16 == 0)
        if ok:
            swapped.append(fqn)
        return ok

    convert_to_float8_training(model, config=Float8LinearConfig.from_recipe_name("tensorwise"),
                               module_filter_fn=eligible)
    return len(swapped)
