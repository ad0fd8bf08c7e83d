"""Model FLOPs, device peaks and the efficiency (MFU, energy) computed from them.

MFU is always computed from a formula and a reviewed peak table, never typed in:
``mfu = throughput_per_device * model_flops_per_unit / peak_flops_per_device``.
"""

from __future__ import annotations

from pydantic import BaseModel, Field


class MatmulRate(BaseModel):
    """The dense matmul rate one device achieved in a short probe through the framework
    (returned by ``matmul_probe``)."""

    flops_per_s: float = Field(gt=0, description="FLOP/s of the best timed window of n x n matmuls.")
    size: int = Field(description="n, the matrices' size.")
    dtype: str = Field(description="The framework's element type of the matrices, e.g. torch.bfloat16.")
    device: str = Field(description="The framework's device the probe ran on, e.g. cuda:0.")
    framework_version: str | None = None
    clock: str | None = Field(
        None, description="How its windows were timed: 'wall' (the device synchronised at both "
                          "ends) or 'thread_cpu' (a CPU device: the busiest thread's CPU time, so "
                          "a neighbour holding the core does not count).")


class FlopsEstimate(BaseModel):
    """Training FLOPs of one unit of work (a token or a sample), as a model plugin counts them."""

    per_unit: float = Field(gt=0, description="Training FLOPs (forward + backward) per unit.")
    unit: str = Field(description="What one unit is, matching the case's throughput unit: "
                                  "'tokens/s' means FLOPs per token.")
    formula: str = Field(description="Name of the formula, e.g. 'palm-6N+12Lhs'; results with "
                                     "different formulas are not comparable.")
    parameters: int | None = Field(None, description="Parameter count N the formula used.")
    model_parameters: int | None = Field(
        None, description="Trainable parameters of the whole model as the training scripts build "
                          "it (tied weights once, a tensor-parallel shard for all its ranks); the "
                          "scripts' read-back must report exactly this. None when unknown (the "
                          "read-back's count is then recorded, not compared).")


class Efficiency(BaseModel):
    """How much of the hardware the run used, per device."""

    flops_formula: str | None = None
    model_flops_per_unit: float | None = Field(None, description="Training FLOPs per unit of throughput.")
    parameters: int | None = None
    achieved_flops_per_device: float | None = Field(
        None, description="Model FLOP/s per device: throughput per device x FLOPs per unit.")
    peak_flops_per_device: float | None = Field(
        None, description="Dense peak FLOP/s of one device at the run's precision (vendor table).")
    mfu: float | None = Field(None, description="Model FLOPs utilisation, 0..1.")
    busy_power_w: float | None = Field(
        None, description="Mean power of all devices together while they were busy (vendor monitor).")
    energy_per_unit_j: float | None = Field(
        None, description="Joules per unit of throughput (per token, per sample): busy power / throughput.")


def compute_efficiency(
    *,
    throughput: float | None,
    unit: str,
    world_size: int,
    flops: FlopsEstimate | None,
    peak_flops_per_device: float | None,
    busy_power_w: float | None,
) -> Efficiency | None:
    """Combine what the plugins reported; ``None`` when there is nothing to report.

    ``throughput`` is the whole run's, in ``unit``; FLOPs counted per another unit are ignored
    rather than mixed (FLOPs per sample times tokens/s would be meaningless).
    """
    if flops is not None and flops.unit != unit:
        flops = None
    if throughput is None or throughput <= 0 or (flops is None and busy_power_w is None):
        return None
    achieved = mfu = None
    if flops is not None:
        achieved = throughput / world_size * flops.per_unit
        if peak_flops_per_device:
            mfu = achieved / peak_flops_per_device
    energy = busy_power_w / throughput if busy_power_w else None
    return Efficiency(
        flops_formula=flops.formula if flops else None,
        model_flops_per_unit=flops.per_unit if flops else None,
        parameters=flops.parameters if flops else None,
        achieved_flops_per_device=achieved,
        peak_flops_per_device=peak_flops_per_device,
        mfu=mfu,
        busy_power_w=busy_power_w,
        energy_per_unit_j=energy,
    )
