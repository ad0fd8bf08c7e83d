"""Reviewed table of dense peak throughput per NVIDIA GPU and precision, in FLOP/s.

Only dense figures: NVIDIA's datasheets print the tensor-core rates *with* 2:4 sparsity
(marked '*'), which are twice the dense rates a training run can reach. Each figure below
names its source. "fp32" is the plain CUDA-core rate; "tf32" is the tensor-core rate that
fp32 matrix products get when TF32 is allowed (harness's training scripts allow it).

Sources
- [H100-WP] NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022), table "Comparison of
  NVIDIA A100 and H100 Data Center GPUs": H100 SXM5 / H100 PCIe columns, dense figures.
- [H100-DS] NVIDIA H100 Tensor Core GPU datasheet (2023/2024), "H100 NVL" column; sparse
  figures halved.
- [H200-DS] NVIDIA H200 Tensor Core GPU datasheet (2024), "H200 SXM" and "H200 NVL" columns;
  sparse figures halved (the H200 SXM is the H100 SXM5 chip with more and faster memory).
- [A100-DS] NVIDIA A100 Tensor Core GPU datasheet (2021): identical for SXM4 and PCIe, 40 GB
  and 80 GB; TF32/BF16/FP16 dense = the sparse figures halved.
- [V100-DS] NVIDIA Tesla V100 datasheet (2020): SXM2, PCIe and V100S PCIe columns; no TF32
  or BF16 on Volta, so those precisions have no entry.
"""

from __future__ import annotations

import re

T = 1e12

# (pattern on the NVML device name, {precision: dense FLOP/s}). First match wins, so the
# more specific names (NVL, PCIe) come before the plain SXM names.
PEAK_TABLE: tuple[tuple[str, dict[str, float]], ...] = (
    # H200 NVL [H200-DS]: FP32 60, TF32 835*, BF16/FP16 1,671* TFLOPS.
    (r"H200 NVL", {"fp32": 60.0 * T, "tf32": 417.5 * T, "bf16": 835.5 * T, "fp16": 835.5 * T,
                   "fp8": 1671.0 * T}),
    # H200 SXM [H200-DS]: FP32 67, TF32 989*, BF16/FP16 1,979*, FP8 3,958* TFLOPS (= H100 SXM5).
    (r"H200", {"fp32": 66.9 * T, "tf32": 494.7 * T, "bf16": 989.4 * T, "fp16": 989.4 * T,
               "fp8": 1978.9 * T}),
    # H100 NVL [H100-DS]: FP32 60, TF32 835*, BF16/FP16 1,671* TFLOPS.
    (r"H100 NVL", {"fp32": 60.0 * T, "tf32": 417.5 * T, "bf16": 835.5 * T, "fp16": 835.5 * T,
                   "fp8": 1671.0 * T}),
    # H100 PCIe [H100-WP]: FP32 51.2, TF32 378, BF16/FP16 756 TFLOPS dense.
    (r"H100 PCIe", {"fp32": 51.2 * T, "tf32": 378.0 * T, "bf16": 756.0 * T, "fp16": 756.0 * T,
                    "fp8": 1513.0 * T}),
    # H100 SXM5 [H100-WP]: FP32 66.9, TF32 494.7, BF16/FP16 989.4 TFLOPS dense.
    # NVML names it "NVIDIA H100 80GB HBM3" (or "H100 SXM5 ...").
    # FP8 1,978.9 TFLOPS dense.
    (r"H100", {"fp32": 66.9 * T, "tf32": 494.7 * T, "bf16": 989.4 * T, "fp16": 989.4 * T,
               "fp8": 1978.9 * T}),
    # A100 [A100-DS]: FP32 19.5, TF32 156, BF16/FP16 312 TFLOPS dense.
    (r"A100", {"fp32": 19.5 * T, "tf32": 156.0 * T, "bf16": 312.0 * T, "fp16": 312.0 * T}),
    # V100S PCIe [V100-DS]: FP32 16.4, FP16 tensor 130 TFLOPS.
    (r"V100S", {"fp32": 16.4 * T, "fp16": 130.0 * T}),
    # V100 PCIe [V100-DS]: FP32 14, FP16 tensor 112 TFLOPS.
    (r"V100-PCIE", {"fp32": 14.0 * T, "fp16": 112.0 * T}),
    # V100 SXM2 [V100-DS]: FP32 15.7, FP16 tensor 125 TFLOPS.
    (r"V100", {"fp32": 15.7 * T, "fp16": 125.0 * T}),
)


def peak_entry(device_name: str) -> dict[str, float] | None:
    """The table row of a device, by its NVML name; ``None`` for a device not reviewed here."""
    for pattern, row in PEAK_TABLE:
        if re.search(pattern, device_name, flags=re.IGNORECASE):
            return row
    return None


# The peak an fp8 run's MFU is measured against: the dense bf16 peak, so that an fp8 run's MFU
# compares with a bf16 run's on the same model FLOPs (fp8 tensor cores peak at twice that; the
# "fp8" entries above are that peak, for reference and for ``supports_fp8``).
FP8_MFU_BASIS = "bf16"


# The first CUDA compute capability with each precision's arithmetic: bf16 came with Ampere
# (8.0), fp8 tensor cores with Ada (8.9) and Hopper (9.0). The capability decides where the
# driver reports it; the name table is the fallback for a device discovered without one.
MIN_CAPABILITY: dict[str, tuple[int, int]] = {"bf16": (8, 0), "fp8": (8, 9)}


def parse_capability(compute_capability: str | None) -> tuple[int, int] | None:
    """``"9.0"`` as ``(9, 0)``; ``None`` for a missing or malformed capability."""
    match = re.fullmatch(r"\s*(\d+)\.(\d+)\s*", compute_capability or "")
    return (int(match[1]), int(match[2])) if match else None


def supports_fp8(device_name: str, compute_capability: str | None = None) -> bool:
    """Whether the device has fp8 tensor cores: compute capability 8.9 or newer where known,
    else the table's Hopper and newer rows (a device not in the table is refused)."""
    capability = parse_capability(compute_capability)
    if capability is not None:
        return capability >= MIN_CAPABILITY["fp8"]
    row = peak_entry(device_name)
    return row is not None and "fp8" in row


# NVIDIA GPUs before Ampere (compute capability below 8.0), by NVML name: Volta (V100, TITAN V),
# Turing (T4, RTX 20xx, Quadro RTX, TITAN RTX), Pascal (P100, P40, P4, GTX 10xx, TITAN X/Xp) and
# older. None has bf16 arithmetic.
PRE_AMPERE = re.compile(
    r"V100|TITAN (V|RTX|Xp?)\b|\bT4\b|RTX 20\d\d|Quadro (RTX|GV|GP|P)|GTX|Tesla [PKM]\d+|\bP100\b|\bP40\b",
    flags=re.IGNORECASE)


def supports_bf16(device_name: str, compute_capability: str | None = None) -> bool | None:
    """Whether the device computes in bf16 (Ampere and newer, compute capability 8.0): from its
    capability where known, else from its table row, else from the pre-Ampere families;
    ``None`` for a device known to none of them."""
    capability = parse_capability(compute_capability)
    if capability is not None:
        return capability >= MIN_CAPABILITY["bf16"]
    row = peak_entry(device_name)
    if row is not None:
        return "bf16" in row
    if PRE_AMPERE.search(device_name):
        return False
    return None


def peak_flops(device_name: str, precision: str, *, tf32_for_fp32: bool = True) -> float | None:
    """Dense peak FLOP/s of one device at ``precision``; ``None`` when not in the table.

    With ``tf32_for_fp32`` an fp32 run is measured against the TF32 tensor-core peak where the
    device has one, because the harness's training scripts allow TF32 for fp32 matrix products.
    An fp8 run is measured against the ``FP8_MFU_BASIS`` (bf16) peak.
    """
    row = peak_entry(device_name)
    if row is None:
        return None
    if precision == "fp8":
        return row.get(FP8_MFU_BASIS) if "fp8" in row else None
    if precision == "fp32" and tf32_for_fp32 and "tf32" in row:
        return row["tf32"]
    return row.get(precision)
