"""AdamW with fp32 master weights and optimizer states in host memory (``offload = "cpu"``).

A model whose fp32 weights, gradients and AdamW states exceed one GPU (gpt3_6.7B: 16 bytes a
parameter, 107 GB) still trains on it: the GPU keeps the weights in the compute dtype (2 bytes)
and an fp32 gradient accumulator (4 bytes); the host keeps the fp32 master weights and both
AdamW moments (12 bytes). Once per optimizer step, chunk by chunk, the gradients go to the
host, a fused CPU AdamW updates the master weights, and their compute-dtype copy goes back.
The copies of one chunk overlap the CPU update of the previous one, and the whole host step
is paid once per optimizer step, so it is amortised over the accumulated micro-batches.

Data parallel, the host update is sharded: after the gradients are averaged over the ranks
(``FlatParameters.average_gradients``), rank r updates only every world-th chunk of the
matrices (their moments are created on first use, so each rank's host holds only its share)
and shares the new compute-dtype weights of its chunks with the other ranks. The small
fp32 parameters are updated on every rank alike.

Standalone (torch only). The update is ``torch.optim.AdamW`` itself (``fused=True`` on the
CPU), so it is the same arithmetic as the in-GPU run's optimizer, in fp32.
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from master_weights import CHUNK_ELEMENTS, FlatParameters


class HostOffloadAdamW(FlatParameters):
    """Owns the model's parameters: flat compute-dtype weights on the device, master copy,
    moments and the update on the host. Call ``step(lr, clip)`` after the last micro-batch.

    ``decay`` and ``no_decay`` are the model's parameters (fp32, on the host, as initialised)
    split by whether weight decay applies; afterwards they are views into flat device buffers
    (``master_weights.FlatParameters``) and their gradients accumulate into one flat fp32 buffer.
    """

    def __init__(self, decay: list[torch.nn.Parameter], no_decay: list[torch.nn.Parameter], *,
                 device: torch.device, dtype: torch.dtype, lr: float, betas: tuple[float, float],
                 eps: float, weight_decay: float, chunk_elements: int = CHUNK_ELEMENTS):
        super().__init__(decay, no_decay, device=device, dtype=dtype,
                         master_device=torch.device("cpu"), chunk_elements=chunk_elements)
        # Pinned staging buffers and copy streams on an accelerator; on the host CPU (a device
        # type without an index) the update is plain and synchronous.
        accelerated = device.index is not None
        self.device_module = torch.get_device_module(device.type)
        pin = accelerated
        # One host AdamW per chunk, so that chunk i's update can run while others travel.
        self.chunks: list[tuple[int, int, torch.optim.AdamW]] = [
            (begin, end, torch.optim.AdamW([self.master[begin:end]], lr=lr, betas=betas, eps=eps,
                                           weight_decay=weight_decay if decays else 0.0, fused=True))
            for begin, end, decays in self.slices]
        largest = max((end - begin for begin, end, _ in self.chunks), default=1)
        self.grad_stage = [torch.empty(largest, dtype=torch.float32, pin_memory=pin) for _ in range(2)]
        self.weight_stage = [torch.empty(largest, dtype=dtype, pin_memory=pin) for _ in range(2)]
        # Downloads and uploads on their own streams, so that PCIe carries both directions at once.
        self.down_stream = self.device_module.Stream(device) if accelerated else None
        self.up_stream = self.device_module.Stream(device) if accelerated else None

    @property
    def host_bytes(self) -> int:
        """Host memory of the master weights and both moments (the staging buffers aside)."""
        return self.numel * 4 * 3

    def step(self, lr: float, max_norm: float) -> float:
        """Clip, update on the host, copy the new weights back; returns the gradient norm."""
        self.average_gradients()
        norm = self.clip_gradients(max_norm)
        for _, _, opt in self.chunks:
            opt.param_groups[0]["lr"] = lr
        owned = self.owned_chunks()
        small = [c for c in self.chunks if c[0] >= self.boundary]
        if self.down_stream is None:
            self._step_on_host(owned + small)
        else:
            self._step_pipelined(owned)
            self._step_on_host(small)
        self._share_weights()
        self.grads.zero_()
        return float(norm)

    @property
    def updated_numel(self) -> int:
        """Parameters this rank updates on the host: its matrix chunks and the small ones."""
        return sum(end - begin for begin, end, _ in self.owned_chunks()) + (self.numel - self.boundary)

    def matrix_chunks(self) -> list[tuple[int, int, torch.optim.AdamW]]:
        return [c for c in self.chunks if c[1] <= self.boundary]

    def owned_chunks(self) -> list[tuple[int, int, torch.optim.AdamW]]:
        """The matrix chunks this rank updates: every world-th, starting at its rank."""
        return self.matrix_chunks()[self.rank::self.world]

    def _share_weights(self) -> None:
        """Each matrix chunk's new compute-dtype weights, from the rank that updated it: the
        other ranks zero their stale copy and one all-reduce sums the chunks (a value plus
        zeros is exact in any dtype; one collective instead of a broadcast per chunk)."""
        if self.world == 1:
            return
        for i, (begin, end, _) in enumerate(self.matrix_chunks()):
            if i % self.world != self.rank:
                self.weights[begin:end].zero_()
        dist.all_reduce(self.weights)

    def _step_on_host(self, chunks) -> None:
        """Plain, synchronous: on the CPU device, and for the few fp32 no-decay parameters."""
        for begin, end, opt in chunks:
            view = opt.param_groups[0]["params"][0]
            view.grad = self.grads[begin:end].to("cpu")
            opt.step()
            view.grad = None
            self._device_weights(begin, end).copy_(view)

    def _step_pipelined(self, chunks) -> None:
        """Chunk i's CPU update overlaps chunk i+1's download and chunk i-1's upload."""
        down, up = self.down_stream, self.up_stream
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
