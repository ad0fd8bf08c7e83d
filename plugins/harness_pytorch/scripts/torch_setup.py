"""Start-up shared by the PyTorch training scripts: the resolved config, device and process group.

The device comes from the vendor's device backend in the resolved config (``config.json``,
key ``device``; harness's ``DeviceBackend``): its torch device type, the modules to import
first, the collective backend, whether each process has a device of its own and how peak
memory is read. Everything here goes through torch's device-agnostic APIs
(``torch.get_device_module``), so a vendor's chip runs these scripts without a change.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Callable

import torch
import torch.distributed as dist

from device_backend import bound_collectives, collective_timeout_s, read_device_backend
from memory_line import memory_line, process_peak_rss_mb
from training_knobs import COMPILE_MODES, GRAD_ALLREDUCE, GRAD_SYNCS


def fail(message: str, code: int = 2):
    print(f"error: {message}", flush=True)
    sys.exit(code)


@dataclass(frozen=True)
class Runtime:
    device: torch.device
    world: int
    rank: int
    #: The vendor's name of its device type (the torch type may differ, e.g. examplechip -> cpu).
    device_name: str
    #: Each process drives a device of its own (accelerators); False: they share the host.
    dedicated: bool
    precisions: frozenset[str]
    peak_memory_source: str

    @property
    def device_module(self):
        return torch.get_device_module(self.device.type)

    def ddp_device_ids(self) -> list[int] | None:
        """DDP's device_ids: this process's device, or None for modules on a shared host."""
        return [self.device.index] if self.dedicated else None

    def loader_options(self, workers: int, persistent: bool = True) -> dict:
        """DataLoader options: worker processes and pinned host memory feed an accelerator;
        on a shared host the training process reads its batches itself. Workers persist across
        epochs: spawning them again at every epoch boundary stalled the GPU (the synthetic
        ImageNet-shaped set is 32 steps an epoch: a fifth of ResNet-50's time went waiting)."""
        if not self.dedicated:
            return {"num_workers": 0}
        # At most the host's CPUs per local process, less one for the process itself.
        local = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
        workers = max(1, min(workers, len(os.sched_getaffinity(0)) // max(1, local) - 1))
        return {"num_workers": workers, "pin_memory": True, "persistent_workers": persistent and workers > 0}

    def check_precision(self, precision: str) -> None:
        """Exit 2 when the device lacks the precision (harness refuses it earlier too)."""
        if precision not in self.precisions:
            fail(f"{self.device_name} devices have no {precision}; use one of "
                 f"{', '.join(sorted(self.precisions))}")
        supported = getattr(self.device_module, "is_bf16_supported", None)
        if precision == "bf16" and self.dedicated and supported is not None and not supported():
            fail(f"bf16 is not supported on this {self.device_name} device; use --precision fp16 or fp32")

    def peak_memory_mb(self) -> tuple[float, str]:
        """This process's peak memory in MiB and what it measures (see peak_memory_line)."""
        if self.peak_memory_source == "allocator":
            return (self.device_module.max_memory_allocated(self.device) / 2**20,
                    f"{self.device_name} max allocated")
        return process_peak_rss_mb(), "process max RSS"


def read_config(path: str) -> tuple[dict, dict]:
    """(settings, params) of the resolved config harness wrote for this run."""
    with open(path, encoding="utf-8") as handle:
        config = json.load(handle)
    return config["settings"], config["params"]


def load_torch_device(backend: dict) -> tuple[str, dict]:
    """Import the modules the backend names and check torch knows its device type; returns
    (torch device type, the backend's torch entry). Exits 2 with a one-line error otherwise."""
    entry = backend.get("frameworks", {}).get("torch")
    if entry is None:
        fail(f"the {backend.get('device_type')} device backend declares no torch device")
    device_type = entry["device_type"]
    for module in entry.get("import_modules", []):
        try:
            importlib.import_module(module)
        except ImportError as exc:
            fail(f"torch device type {device_type!r} needs module {module}, which does not import: {exc}")
    try:
        torch.get_device_module(device_type)
    except RuntimeError:
        hint = entry.get("import_modules") or [f"torch_{device_type}"]
        fail(f"torch has no device type {device_type!r}; is {hint[0]} installed?")
    return device_type, entry


def start_runtime(config_path: str, seed: int) -> Runtime:
    """Pick this rank's device (torchrun sets WORLD_SIZE/RANK/LOCAL_RANK) as the vendor's
    backend declares it, join the process group with the declared collective backend when
    there are several ranks, and seed torch."""
    backend = read_device_backend(config_path)
    device_type, entry = load_torch_device(backend)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    dedicated = bool(backend.get("addressed_by_local_rank"))
    module = torch.get_device_module(device_type)
    if dedicated:
        if hasattr(module, "is_available") and not module.is_available():
            fail(f"torch sees no {device_type} device (torch.{device_type}.is_available() is False)")
        device = torch.device(device_type, int(os.environ.get("LOCAL_RANK", "0")))
        module.set_device(device)
    else:
        device = torch.device(device_type)
    # 'high' lets fp32 matmuls use TF32 where the device has it (the nvidia backend asks for it).
    torch.set_float32_matmul_precision(backend.get("float32_matmul_precision", "highest"))
    if world > 1:
        bound_collectives()
        dist.init_process_group(backend=entry.get("dist_backend"),
                                timeout=timedelta(seconds=collective_timeout_s(config_path)))
    torch.manual_seed(seed)
    return Runtime(device=device, world=world, rank=rank,
                   device_name=backend.get("device_type", device_type), dedicated=dedicated,
                   precisions=frozenset(backend.get("precisions", ["fp32"])),
                   peak_memory_source=backend.get("peak_memory", "process_rss"))


def start_training(config_path: str) -> tuple[dict, dict, Runtime]:
    """Every script's start: (settings, params) of the resolved config and this rank's
    started runtime (``start_runtime``), having exited 2 when the device lacks the precision."""
    settings, params = read_config(config_path)
    runtime = start_runtime(config_path, settings["seed"])
    runtime.check_precision(settings["precision"])
    return settings, params, runtime


def optimizer_step(optimizer: torch.optim.Optimizer, scaler: torch.amp.GradScaler,
                   parameters=None, max_norm: float | None = None) -> torch.Tensor | None:
    """The optimizer step after a step's backward passes, through the loss scaler: with
    ``max_norm`` the gradients of ``parameters`` are unscaled and clipped to that total norm
    first (the norm before clipping is returned; None without clipping). A step whose fp16
    gradients overflowed is skipped by the scaler, which lowers its scale. Gradients are
    cleared for the next step either way."""
    grad_norm = None
    if max_norm is not None:
        scaler.unscale_(optimizer)  # clip the true gradients, not the scaled ones
        grad_norm = torch.nn.utils.clip_grad_norm_(parameters, max_norm)
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
    return grad_norm


def fused_optimizer_kernels(device: torch.device) -> bool:
    """Whether torch's fused optimizer kernels serve ``device``: an accelerator's, not the CPU's
    (the CPU runs, the equivalence check among them, keep the reference for-each update)."""
    return device.type != "cpu"


def compiled(module: torch.nn.Module, params: dict) -> torch.nn.Module:
    """``module`` through torch.compile in the case's ``compile_mode`` when ``compile`` is set;
    ``module`` itself otherwise."""
    if not params.get("compile"):
        return module
    mode = params.get("compile_mode", "default")
    if mode not in COMPILE_MODES:
        fail(f"compile_mode {mode!r} is not one of {', '.join(COMPILE_MODES)}")
    return torch.compile(module, mode=None if mode == "default" else mode)


def _memory_order(tensor: torch.Tensor) -> list[int]:
    """The dimensions of ``tensor`` from the slowest-varying in memory to the fastest: permuted so,
    a dense tensor (contiguous, channels-last, ...) is contiguous and views as 1-D."""
    return sorted(range(tensor.dim()), key=lambda d: -tensor.stride(d))


class FlatGradientSync(torch.nn.Module):
    """Data parallel for a module whose backward produces every gradient at its end (a compiled
    module: one graph, one CUDA graph under reduce-overhead), so that nothing can overlap the
    all-reduce anyway. After the backward of each forward outside ``no_sync`` the gradients are
    gathered into one flat buffer, all-reduced once, averaged and copied back: a few launches
    from the host a step, where DDP's reducer scales and copies each gradient tensor into its
    bucket from a hook per tensor. Every rank starts from rank 0's parameters, as under DDP;
    buffers stay each rank's own (``data_parallel``).

    Tensors are flattened in the order their elements lie in memory, worked out once per
    parameter: autograd lays a dense parameter's gradient out as the parameter (its gradient
    layout contract), so a channels-last weight's gradient views as 1-D without a copy."""

    def __init__(self, module: torch.nn.Module, world: int, wire_dtype: torch.dtype | None):
        super().__init__()
        self.module = module
        self.world = world
        self.wire_dtype = wire_dtype
        self._sync = True
        self._params = [q for q in module.parameters() if q.requires_grad]
        if len({q.dtype for q in self._params}) > 1:
            fail("grad_sync flat needs the trainable parameters in one dtype; use grad_sync=ddp")
        self._orders = [_memory_order(q) for q in self._params]
        self._sizes = [q.numel() for q in self._params]
        with torch.no_grad():
            self._average(self._flat_views([q.detach() for q in self._params]), broadcast=True)

    def _flat_views(self, tensors: list[torch.Tensor]) -> list[torch.Tensor]:
        return [t.permute(order).view(-1) for t, order in zip(tensors, self._orders)]

    def _average(self, views: list[torch.Tensor], broadcast: bool = False) -> None:
        """Rank 0's values (``broadcast``) or the mean over the ranks, written back into ``views``."""
        flat = torch.cat(views)
        if broadcast:
            dist.broadcast(flat, 0)
        else:
            flat.div_(self.world)  # before a half-precision wire, so that the sum cannot overflow
            wire = flat if self.wire_dtype is None else flat.to(self.wire_dtype)
            dist.all_reduce(wire)
            if wire is not flat:
                flat.copy_(wire)
        torch._foreach_copy_(views, list(flat.split(self._sizes)))

    def forward(self, *args, **kwargs):
        out = self.module(*args, **kwargs)
        if self._sync and torch.is_grad_enabled():
            if not isinstance(out, torch.Tensor):
                fail("grad_sync flat needs a module that returns one tensor; use grad_sync=ddp")
            if out.requires_grad:
                out.register_hook(self._arm)
        return out

    def _arm(self, grad: torch.Tensor) -> torch.Tensor:
        # The hook runs as the backward starts; the queued callback when it has finished (on
        # the stream the backward was called from, after the gradients are written).
        torch.autograd.Variable._execution_engine.queue_callback(self._all_reduce)
        return grad

    @contextmanager
    def no_sync(self):
        """Forwards (and their backwards) that only accumulate, as DDP's ``no_sync``."""
        self._sync = False
        try:
            yield
        finally:
            self._sync = True

    @torch.no_grad()
    def _all_reduce(self) -> None:
        for q in self._params:
            if q.grad is None:  # every rank sends the same layout
                q.grad = torch.zeros_like(q)
        self._average(self._flat_views([q.grad for q in self._params]))


class CompiledGradientSync(torch.nn.Module):
    """Data parallel for a compiled module whose all-reduces are part of its compiled backward:
    DDP with its Python reducer, the backward traced by compiled autograd. Each bucket's
    all-reduce becomes a node of the backward graph, which Inductor may reorder to overlap the
    gradients still being computed (``reorder_for_compute_comm_overlap``), and reduce-overhead
    may capture in the backward's CUDA graph. With DDP around a compiled module (``ddp``,
    ``flat``) the all-reduce can only start after the backward's one graph.
    The backward goes through ``backward`` (``torch_setup.backward``), which turns compiled
    autograd on for it."""

    def __init__(self, module: torch.nn.Module, runtime: Runtime, compile_mode: str):
        super().__init__()
        from torch.nn.parallel import DistributedDataParallel as DDP

        torch._dynamo.config.optimize_ddp = "python_reducer"  # read when DDP is built
        torch._inductor.config.reorder_for_compute_comm_overlap = True
        options = {} if compile_mode == "default" else {"mode": compile_mode}
        # DDP's default 25 MB buckets: several all-reduces, the first of which has its gradients
        # while the earlier layers' are still being computed.
        self.compiled = torch.compile(DDP(module, device_ids=runtime.ddp_device_ids(),
                                          broadcast_buffers=False), **options)
        self._backward_compiler = torch.compile(**options)  # compiles each traced backward graph

    def forward(self, *args, **kwargs):
        return self.compiled(*args, **kwargs)

    def no_sync(self):
        """Forwards (and their backwards) that only accumulate, DDP's ``no_sync``."""
        return self.compiled.no_sync()

    def backward(self, loss: torch.Tensor) -> None:
        with torch._dynamo.compiled_autograd._enable(self._backward_compiler):
            loss.backward()


def backward(module: torch.nn.Module, loss: torch.Tensor) -> None:
    """``loss.backward()``, through the module's own backward where its gradient sync needs one
    (``CompiledGradientSync``)."""
    if isinstance(module, CompiledGradientSync):
        module.backward(loss)
    else:
        loss.backward()


def data_parallel(module: torch.nn.Module, runtime: Runtime, grad_allreduce: str = "fp32",
                  micro_batches: int = 1, grad_sync: str = "ddp",
                  compile_mode: str = "default") -> torch.nn.Module:
    """``module`` wrapped in DistributedDataParallel, its gradients living in the all-reduce
    buckets (no extra copy of every gradient), its buffers left to each rank, and its
    gradients all-reduced in ``grad_allreduce``:
    "fp16"/"bf16" halve the bytes on the wire as NGC's BERT recipe does
    (``allreduce_post_accumulation_fp16``); the optimizer still sees fp32 gradients.
    ``micro_batches``: backward passes a step, all but the last under ``no_sync``.
    ``grad_sync="flat"``: ``FlatGradientSync`` instead of DDP; ``"compiled"``:
    ``CompiledGradientSync`` for a compiled ``module``, compiled again in ``compile_mode``
    around DDP."""
    from torch.nn.parallel import DistributedDataParallel as DDP

    if grad_allreduce not in GRAD_ALLREDUCE:
        fail(f"grad_allreduce {grad_allreduce!r} is not one of {', '.join(GRAD_ALLREDUCE)}")
    if grad_sync not in GRAD_SYNCS:
        fail(f"grad_sync {grad_sync!r} is not one of {', '.join(GRAD_SYNCS)}")
    if grad_sync == "flat":
        wire = {"fp32": None, "fp16": torch.float16, "bf16": torch.bfloat16}[grad_allreduce]
        return FlatGradientSync(module, runtime.world, wire)
    if grad_sync == "compiled":
        if not isinstance(module, torch._dynamo.eval_frame.OptimizedModule):
            fail("grad_sync compiled needs a compiled module (compile=true)")
        if grad_allreduce != "fp32":
            fail("grad_sync compiled all-reduces in fp32 (DDP's Python reducer takes no comm "
                 "hook); use grad_allreduce=fp32 or grad_sync=flat")
        return CompiledGradientSync(module._orig_mod, runtime, compile_mode)
    # Buffers are not broadcast from rank 0 before every forward (DDP's default): the cases'
    # buffers are constants every rank builds alike (BERT's position ids) or batch-norm running
    # statistics, which only evaluation reads and the timed loop never evaluates. Broadcasting
    # ResNet-50's 159 cost the host 1.4 ms of DDP's forward and about 1.7 ms of copies a step
    # (profiled on 2 H200s); on 4 H200s it kept 85.6% of one GPU's rate a GPU with the
    # broadcast, 93.6% without (BERT 78.6% and 83.4%).
    options = {"gradient_as_bucket_view": True, "broadcast_buffers": False}
    if isinstance(module, torch._dynamo.eval_frame.OptimizedModule):
        # A compiled module's backward is one graph (one CUDA graph under reduce-overhead): its
        # gradients are all ready at its end, so buckets cannot overlap it and each only adds a
        # launch. One bucket and a static graph (the reducer's bookkeeping done once) took BERT
        # on 2 H200s from 58.6% to 83.1% of one GPU's rate a GPU, ResNet-50 from 83.5% to 88.7%.
        # A static graph fails under no_sync (seen with torch 2.14: an "expect_autograd_hooks_"
        # internal assert on the micro-batch after one without), so accumulation keeps it off.
        size_mb = sum(q.numel() * q.element_size() for q in module.parameters()) / 2**20
        options.update(bucket_cap_mb=size_mb + 1, static_graph=micro_batches == 1)
    wrapped = DDP(module, device_ids=runtime.ddp_device_ids(), **options)
    if grad_allreduce != "fp32":
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

        hook = {"fp16": default_hooks.fp16_compress_hook, "bf16": default_hooks.bf16_compress_hook}
        wrapped.register_comm_hook(state=None, hook=hook[grad_allreduce])
    return wrapped


def mean_over_ranks(value: torch.Tensor, world: int) -> float:
    """The mean of this rank's scalar ``value`` over the ``world`` ranks, as a float (collective
    when there are several ranks; waits for the device's queued work)."""
    if world > 1:
        dist.all_reduce(value)
        value /= world
    return float(value)


def run_and_exit(main: Callable[[], int]) -> None:
    """Run ``main`` and exit with its code, skipping the interpreter's teardown: there, torch
    2.13's gloo threads are destroyed in an order that intermittently aborts a finished rank
    ("terminate called without an active exception", SIGABRT) and fails a completed run."""
    exit_code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(exit_code)


def peak_memory_line(runtime: Runtime) -> str:
    """The peak-memory line harness's parsers read (Megatron style), for every script: the max
    over ranks of what the backend says to read (the device allocator's peak, or the
    process's peak resident memory). Collective when there are several ranks."""
    peak, source = runtime.peak_memory_mb()
    if runtime.world > 1:
        reduced = torch.tensor([peak], device=runtime.device)
        dist.all_reduce(reduced, op=dist.ReduceOp.MAX)
        peak = float(reduced)
    return memory_line(peak, f"{source}, max over ranks")


def finish_training(runtime: Runtime, memory_prefix: str = "> ") -> None:
    """Every script's end: rank 0 prints the peak-memory line (``peak_memory_line``,
    collective, so every rank calls this) after ``memory_prefix`` and ``> training finished``;
    then all ranks leave together."""
    memory = peak_memory_line(runtime)
    if runtime.rank == 0:
        print(f"{memory_prefix}{memory}", flush=True)
        print("> training finished", flush=True)
    if runtime.world > 1:
        dist.barrier()  # leave together
