"""AdamW with fp32 master weights and optimizer states in host memory (``offload = "cpu"``).

A model whose fp32 weights, gradients and AdamW states exceed one GPU (gpt3_6.7B: 16 bytes a
parameter, 107 GB) still trains on it: the GPU keeps the weights in the compute dtype (2 bytes)
and an fp32 gradient accumulator (4 bytes); the host keeps the fp32 master weights and both
AdamW moments (12 bytes). Once per optimizer step, chunk by chunk, the gradients go to the
host, a fused CPU AdamW updates the master weights, and their compute-dtype copy goes back.
The copies of one chunk overlap the CPU update of the previous one, and the whole host step
is paid once per optimizer step, so it is amortised over the accumulated micro-batches.

Standalone (torch only). The update is ``torch.optim.AdamW`` itself (``fused=True`` on the
CPU), so it is the same arithmetic as the in-GPU run's optimizer, in fp32.
"""

from __future__ import annotations

import torch

# Elements per transfer chunk: 64 Mi fp32 values (256 MiB) is large enough for full PCIe speed
# and small enough that two pinned staging buffers per direction cost little host memory.
CHUNK_ELEMENTS = 64 * 2**20


class HostOffloadAdamW:
    """Owns the model's parameters: flat compute-dtype weights on the device, master copy,
    moments and the update on the host. Call ``step(lr, clip)`` after the last micro-batch.

    ``decay`` and ``no_decay`` are the model's parameters (fp32, on the host, as initialised)
    split by whether weight decay applies; afterwards they are views into one flat
    compute-dtype device buffer and their gradients accumulate into one flat fp32 buffer.
    """

    def __init__(self, decay: list[torch.nn.Parameter], no_decay: list[torch.nn.Parameter], *,
                 device: torch.device, dtype: torch.dtype, lr: float, betas: tuple[float, float],
                 eps: float, weight_decay: float, chunk_elements: int = CHUNK_ELEMENTS):
        self.device, self.dtype = device, dtype
        params = list(decay) + list(no_decay)
        self.params = params
        sizes = [p.numel() for p in params]
        self.numel = sum(sizes)
        # Pinned staging buffers and copy streams on an accelerator; on the host CPU (a device
        # type without an index) the update is plain and synchronous.
        accelerated = device.index is not None
        self.device_module = torch.get_device_module(device.type)
        pin = accelerated
        # Host: the fp32 master weights, flat, in the model's parameter order.
        self.master = torch.empty(self.numel, dtype=torch.float32)
        offsets, start = [], 0
        for p, n in zip(params, sizes):
            self.master[start:start + n].copy_(p.detach().reshape(-1))
            offsets.append(start)
            start += n
        # Device: the matrices in the compute dtype; biases and LayerNorm weights (a thousandth
        # of the parameters) stay fp32 as in the in-GPU run; one flat fp32 gradient accumulator.
        boundary = self.boundary = sum(sizes[:len(decay)])
        self.weights = self.master[:boundary].to(device=device, dtype=dtype)
        self.small_weights = self.master[boundary:].to(device=device, copy=True)
        self.grads = torch.zeros(self.numel, dtype=torch.float32, device=device)
        for p, offset, n in zip(params, offsets, sizes):
            p.data = self._device_weights(offset, offset + n).view(p.shape)
            p.grad = None
            p.register_post_accumulate_grad_hook(self._accumulator(offset, n))
        # Chunks never straddle the decay / no-decay boundary: each has its own optimizer.
        self.chunks: list[tuple[int, int, torch.optim.AdamW]] = []
        for lo, hi, wd in ((0, boundary, weight_decay), (boundary, self.numel, 0.0)):
            for begin in range(lo, hi, chunk_elements):
                end = min(hi, begin + chunk_elements)
                view = self.master[begin:end]
                opt = torch.optim.AdamW([view], lr=lr, betas=betas, eps=eps, weight_decay=wd,
                                        fused=True)
                self.chunks.append((begin, end, opt))
        largest = max((end - begin for begin, end, _ in self.chunks), default=1)
        self.grad_stage = [torch.empty(largest, dtype=torch.float32, pin_memory=pin) for _ in range(2)]
        self.weight_stage = [torch.empty(largest, dtype=dtype, pin_memory=pin) for _ in range(2)]
        # Downloads and uploads on their own streams, so that PCIe carries both directions at once.
        self.down_stream = self.device_module.Stream(device) if accelerated else None
        self.up_stream = self.device_module.Stream(device) if accelerated else None

    def _device_weights(self, begin: int, end: int) -> torch.Tensor:
        if begin >= self.boundary:
            return self.small_weights[begin - self.boundary:end - self.boundary]
        return self.weights[begin:end]

    @property
    def host_bytes(self) -> int:
        """Host memory of the master weights and both moments (the staging buffers aside)."""
        return self.numel * 4 * 3

    def _accumulator(self, offset: int, n: int):
        def accumulate(param: torch.Tensor) -> None:
            # Accumulate in fp32 whatever the compute dtype, and free the low-precision gradient.
            self.grads[offset:offset + n].add_(param.grad.reshape(-1))
            param.grad = None
        return accumulate

    def grad_norm(self) -> torch.Tensor:
        return torch.linalg.vector_norm(self.grads)

    def step(self, lr: float, max_norm: float) -> float:
        """Clip, update on the host, copy the new weights back; returns the gradient norm."""
        norm = self.grad_norm()
        if max_norm > 0:
            self.grads.mul_(torch.clamp(max_norm / (norm + 1e-6), max=1.0))
        for _, _, opt in self.chunks:
            opt.param_groups[0]["lr"] = lr
        if self.down_stream is None:
            self._step_on_host()
        else:
            self._step_pipelined()
        self.grads.zero_()
        return float(norm)

    def _step_on_host(self, chunks=None) -> None:
        """Plain, synchronous: on the CPU device, and for the few fp32 no-decay parameters."""
        for begin, end, opt in self.chunks if chunks is None else chunks:
            view = opt.param_groups[0]["params"][0]
            view.grad = self.grads[begin:end].to("cpu")
            opt.step()
            view.grad = None
            self._device_weights(begin, end).copy_(view)

    def _step_pipelined(self) -> None:
        """Chunk i's CPU update overlaps chunk i+1's download and chunk i-1's upload."""
        down, up = self.down_stream, self.up_stream
        chunks = [c for c in self.chunks if c[1] <= self.boundary]
        module = self.device_module
        compute = module.current_stream(self.device)
        down.wait_stream(compute)  # the gradients are complete and clipped
        up.wait_stream(compute)  # nothing still reads the weights
        downloaded = [module.Event() for _ in range(2)]
        uploaded = [None, None]

        def download(i: int) -> None:
            begin, end, _ = chunks[i]
            with module.stream(down):
                self.grad_stage[i % 2][:end - begin].copy_(self.grads[begin:end], non_blocking=True)
                downloaded[i % 2].record(down)

        for i in range(min(2, len(chunks))):
            download(i)
        for i, (begin, end, opt) in enumerate(chunks):
            slot, n = i % 2, end - begin
            downloaded[slot].synchronize()
            view = opt.param_groups[0]["params"][0]
            view.grad = self.grad_stage[slot][:n]
            opt.step()
            view.grad = None
            if i + 2 < len(chunks):
                download(i + 2)  # this slot's gradient buffer is free again
            if uploaded[slot] is not None:
                uploaded[slot].synchronize()  # the staging buffer's last upload has finished
            self.weight_stage[slot][:n].copy_(view)  # fp32 -> compute dtype, on the host
            with module.stream(up):
                self.weights[begin:end].copy_(self.weight_stage[slot][:n], non_blocking=True)
                uploaded[slot] = module.Event()
                uploaded[slot].record(up)
        compute.wait_stream(down)  # the gradient buffer is zeroed next, on the compute stream
        compute.wait_stream(up)
        self._step_on_host([c for c in self.chunks if c[0] >= self.boundary])
