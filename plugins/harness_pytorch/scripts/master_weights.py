"""Mixed precision with the fp32 master weights kept by the optimizer (``master_weights = "optimizer"``).

The model's matrices are stored in the compute dtype (bf16), so no micro-batch casts them:
with fp32 parameters under autocast, every micro-batch reads each fp32 matrix and writes its
bf16 copy in the forward pass, and casts and accumulates its gradient in the backward pass
(about 24 bytes of memory traffic per parameter per micro-batch, 160 GB a micro-batch for
gpt3_6.7B). Here gradients arrive in bf16 and are added at once into one flat fp32 accumulator
(10 bytes a parameter); the optimizer updates fp32 master weights once per optimizer step and
writes their bf16 copy back (Megatron-LM's bf16 layout: bf16 parameters, fp32 main parameters
and fp32 gradient accumulation). Biases and LayerNorm weights, a thousandth of the parameters,
stay fp32.

``DeviceMasterAdamW`` keeps the master weights and AdamW moments in the device's memory;
``host_offload.HostOffloadAdamW`` keeps them in host memory. Both share ``FlatParameters``.

Data parallel (several ranks in a process group): every rank keeps the whole model and
accumulates its own micro-batches' gradients; once per optimizer step the flat fp32 gradients
are averaged over the ranks in one all-reduce (no DDP wrapper: its per-parameter hooks would
race with the accumulation hooks here), so every rank clips and updates with the same
gradients. Standalone (torch only).
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from grad_accumulate import accumulate as accumulate_gradient

# Elements per optimizer tensor: the flat master is handed to AdamW in views of at most this
# many elements (64 Mi fp32 values, 256 MiB), so no single kernel indexes billions of elements;
# host offload moves one such chunk per transfer, large enough for full PCIe speed and small
# enough that two pinned staging buffers per direction cost little host memory.
CHUNK_ELEMENTS = 64 * 2**20


class FlatParameters:
    """The model's parameters rebuilt as views into flat buffers, with an fp32 master copy.

    ``decay`` and ``no_decay`` are the model's parameters (fp32, as initialised, anywhere)
    split by whether weight decay applies. Afterwards the matrices (``decay``) are views into
    one flat compute-dtype buffer on ``device`` and the small parameters views into one flat
    fp32 buffer; ``master`` (on ``master_device``) holds all of them in fp32, in that order;
    every gradient is added into the flat fp32 ``grads`` on the device as soon as autograd has
    it, and the parameter's own gradient is freed.
    """

    def __init__(self, decay: list[torch.nn.Parameter], no_decay: list[torch.nn.Parameter], *,
                 device: torch.device, dtype: torch.dtype, master_device: torch.device,
                 chunk_elements: int = CHUNK_ELEMENTS):
        self.device, self.dtype = device, dtype
        params = list(decay) + list(no_decay)
        self.params, self.decay_count = params, len(decay)
        sizes = [p.numel() for p in params]
        self.numel = sum(sizes)
        self.master = torch.empty(self.numel, dtype=torch.float32, device=master_device)
        offsets, start = [], 0
        for p, n in zip(params, sizes):
            self.master[start:start + n].copy_(p.detach().reshape(-1))
            offsets.append(start)
            start += n
        self.world = dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1
        self.rank = dist.get_rank() if self.world > 1 else 0
        if self.world > 1:
            self._check_same_start()
        boundary = self.boundary = sum(sizes[:len(decay)])
        self.weights = self.master[:boundary].to(device=device, dtype=dtype)
        # The small fp32 parameters: the master itself when it lives on the device (``to``
        # returns the tensor itself then), so the optimizer updates them in place.
        self.small_weights = self.master[boundary:].to(device=device)
        self.grads = torch.zeros(self.numel, dtype=torch.float32, device=device)
        self.offsets = offsets
        for p, offset, n in zip(params, offsets, sizes):
            p.data = self._device_weights(offset, offset + n).view(p.shape)
            p.grad = None
            p.register_post_accumulate_grad_hook(self._accumulator(offset, n))
        # (begin, end, decays) slices of the flat buffers; none straddles the boundary.
        self.slices: list[tuple[int, int, bool]] = [
            (begin, min(hi, begin + chunk_elements), decays)
            for lo, hi, decays in ((0, boundary, True), (boundary, self.numel, False))
            for begin in range(lo, hi, chunk_elements)]

    def _device_weights(self, begin: int, end: int) -> torch.Tensor:
        if begin >= self.boundary:
            return self.small_weights[begin - self.boundary:end - self.boundary]
        return self.weights[begin:end]

    def _accumulator(self, offset: int, n: int):
        def accumulate(param: torch.Tensor) -> None:
            # Autograd calls this hook even when a layer's backward returned no gradient for
            # the weight, having added it into main_grad itself (expose_main_grads): nothing
            # arrived then, so nothing is dropped.
            if param.grad is None:
                return
            # Accumulate in fp32 whatever the compute dtype, and free the low-precision gradient.
            accumulate_gradient(self.grads[offset:offset + n], param.grad)
            param.grad = None
        return accumulate

    def expose_main_grads(self) -> int:
        """Give every matrix a ``main_grad``: its slice of the flat fp32 gradients, shaped like
        it, for layers that add their weight gradient there themselves (``gpt_model.Linear``)
        instead of handing autograd a compute-dtype gradient for the hook to add. Returns how
        many parameters got one. Gradients that still arrive through autograd are added by the
        hook as before, into the same slice."""
        storage = self.grads.untyped_storage()
        for p, offset in zip(self.params[:self.decay_count], self.offsets):
            # The slice's memory as a tensor of its own, not a view: views share the buffer's
            # version counter, and the fused linear saves its main_grad for backward, so each
            # layer's update would look to autograd like a change to every other layer's.
            main_grad = torch.empty(0, dtype=self.grads.dtype, device=self.grads.device)
            p.main_grad = main_grad.set_(storage, offset, p.shape)
        return self.decay_count

    def _check_same_start(self) -> None:
        """Ranks seeded alike build the same model; a difference would train divergent replicas
        silently (DDP would broadcast rank 0's weights), so it stops the run here instead."""
        digest = torch.zeros(2, dtype=torch.float64)
        for begin in range(0, self.numel, CHUNK_ELEMENTS):  # float64 a chunk at a time
            piece = self.master[begin:begin + CHUNK_ELEMENTS].double()
            digest += torch.stack([piece.sum(), piece.square().sum()]).cpu()
        digest = digest.to(self.device)
        gathered = [torch.empty_like(digest) for _ in range(self.world)]
        dist.all_gather(gathered, digest)
        if any(not torch.equal(g, gathered[0]) for g in gathered):
            raise RuntimeError("data-parallel ranks start from different weights (seed them alike)")

    def average_gradients(self) -> None:
        """The ranks' accumulated gradients, averaged over the ranks (a no-op on one rank)."""
        if self.world > 1:
            dist.all_reduce(self.grads)  # SUM: gloo has no AVG
            self.grads.div_(self.world)

    def clip_gradients(self, max_norm: float) -> torch.Tensor:
        """Scale the accumulated gradients to at most ``max_norm`` (if > 0); returns their norm."""
        norm = torch.linalg.vector_norm(self.grads)
        if max_norm > 0:
            self.grads.mul_(torch.clamp(max_norm / (norm + 1e-6), max=1.0))
        return norm


class DeviceMasterAdamW(FlatParameters):
    """fp32 master weights and AdamW moments on the device (``torch.optim.AdamW``, fused where
    the device has the kernel). Call ``step(lr, clip)`` after the last micro-batch."""

    def __init__(self, decay: list[torch.nn.Parameter], no_decay: list[torch.nn.Parameter], *,
                 device: torch.device, dtype: torch.dtype, lr: float, betas: tuple[float, float],
                 eps: float, weight_decay: float, fused: bool, chunk_elements: int = CHUNK_ELEMENTS):
        super().__init__(decay, no_decay, device=device, dtype=dtype, master_device=device,
                         chunk_elements=chunk_elements)
        self.views = [self.master[begin:end] for begin, end, _ in self.slices]
        groups = [{"params": [v for v, c in zip(self.views, self.slices) if c[2] == decays],
                   "weight_decay": weight_decay if decays else 0.0} for decays in (True, False)]
        self.optimizer = torch.optim.AdamW([g for g in groups if g["params"]], lr=lr, betas=betas,
                                           eps=eps, fused=fused)

    @property
    def device_bytes(self) -> int:
        """Device memory of the optimizer's own state: fp32 master, two moments, gradients."""
        return self.numel * 4 * 4

    def step(self, lr: float, max_norm: float) -> float:
        """Average over the ranks, clip, update the fp32 masters (every rank the same update),
        refresh the compute-dtype weights; returns the norm."""
        self.average_gradients()
        norm = self.clip_gradients(max_norm)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        for view, (begin, end, _) in zip(self.views, self.slices):
            view.grad = self.grads[begin:end]
        self.optimizer.step()
        for view in self.views:
            view.grad = None
        self.weights.copy_(self.master[:self.boundary])
        self.grads.zero_()
        return float(norm)
