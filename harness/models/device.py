"""Devices a vendor plugin discovered."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_serializer, field_validator


class DeviceInfo(BaseModel):
    """One device (a GPU, an NPU, the host CPU) as the vendor's driver numbers and names it."""

    index: int = Field(description="The driver's index of the device; what visible-devices variables list.")
    name: str = Field(description="Model name as the driver reports it, e.g. NVIDIA H200; peak-FLOPs tables key on it.")
    memory_bytes: int | None = Field(None, description="Device memory in bytes, if known.")
    uuid: str | None = Field(None, description="The driver's unique id of the device, if it has one.")
    compute_capability: str | None = Field(
        None, description="The vendor's architecture version of the device as \"major.minor\", "
                          "if the driver reports one: for NVIDIA the CUDA compute capability, "
                          "e.g. 9.0 for Hopper; a vendor may decide precision support on it."
    )


class DeviceSet(BaseModel):
    """What a vendor found on this machine; recorded in every result."""

    vendor: str = Field(description="Name of the vendor that discovered the devices (VendorSpec.name).")
    kind: str = Field(description="cpu, gpu, ...")
    devices: list[DeviceInfo] = Field(description="The devices a run may use, in the driver's order.")
    driver_version: str | None = Field(None, description="Version of the vendor's driver, if known.")
    runtime_version: str | None = Field(None, description="e.g. the CUDA version the driver supports.")
    interconnect: str | None = Field(None, description="How the devices are linked, e.g. NVLink, if known.")
    visible_devices_env: str | None = Field(
        None, description="Environment variable that selects devices, e.g. CUDA_VISIBLE_DEVICES."
    )

    @property
    def count(self) -> int:
        """Number of devices."""
        return len(self.devices)


PeakMemorySource = Literal["allocator", "process_rss"]

#: Variables no vendor may declare for a built-in script's launch: they change which code the
#: interpreter or the dynamic loader loads.
UNDECLARABLE_ENV_PREFIXES = ("PYTHON", "LD_PRELOAD", "LD_AUDIT", "HARNESS_DATA_NONCE")


class FrameworkDevice(BaseModel):
    """How one framework library addresses the vendor's devices."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    device_type: str = Field(
        description="The library's own name of the device type: a torch device type (cuda, npu, "
                    "xpu, hpu, cpu, ...), a Paddle place (gpu, npu, xpu, cpu, a custom device "
                    "type) or an MXNet context (gpu, cpu)."
    )
    import_modules: tuple[str, ...] = Field(
        (), description="Python modules each training process imports before it uses the device, "
                        "e.g. torch_npu, which registers the npu device type with torch."
    )
    dist_backend: str | None = Field(
        None, description="Collective-communication backend of multi-process runs: nccl, gloo, "
                          "hccl, xccl, bkcl, ...; None leaves it to the framework's launcher."
    )


class DeviceBackend(BaseModel):
    """How the training processes reach a vendor's devices: what the vendor declares so that the
    built-in framework scripts run on its chip without knowing it (``VendorSpec.backend``).

    It becomes ``ResolvedConfig.device``, so every training script reads it from the
    ``config.json`` harness writes for the run; no script guesses its device.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    device_type: str = Field(
        description="The vendor's name of its device type, as results and logs show it, e.g. "
                    "cuda, npu, cpu."
    )
    frameworks: dict[str, FrameworkDevice] = Field(
        description="Per framework library the training scripts import (torch, paddle, mxnet): "
                    "its device type string, modules to import first and collective backend. "
                    "A library missing here cannot run on the vendor's devices."
    )
    addressed_by_local_rank: bool = Field(
        description="Each training process selects a device of its own by its local rank among "
                    "the visible ones (torch.device(type, LOCAL_RANK), Paddle's "
                    "FLAGS_selected_<place>s, MXNet's context index); False: the framework's "
                    "device type has no index (the host CPU) and the processes share it."
    )
    visible_devices_env: str | None = Field(
        None, description="Environment variable that selects the devices a process may see, "
                          "e.g. CUDA_VISIBLE_DEVICES, ASCEND_RT_VISIBLE_DEVICES."
    )
    precisions: frozenset[Literal["fp32", "fp16", "bf16", "fp8"]] = Field(
        frozenset({"fp32"}), description="Training precisions the devices have; another is "
                                         "refused before launch."
    )
    peak_memory: PeakMemorySource = Field(
        "process_rss", description="How a script reads peak memory: 'allocator' asks the "
                                   "framework's device allocator (max allocated on the device), "
                                   "'process_rss' the process's peak resident memory."
    )
    float32_matmul_precision: Literal["highest", "high", "medium"] = Field(
        "highest", description="torch.set_float32_matmul_precision for fp32 matmuls: 'high' "
                               "lets them use TF32 on NVIDIA GPUs."
    )
    launch_env: frozenset[str] = Field(
        frozenset(), exclude=True,
        description="Environment variables the vendor's ``run`` wrapper may add to the launch of a "
                    "built-in framework's script besides visible_devices_env: threads, runtime "
                    "knobs (OMP_NUM_THREADS, NCCL_...). Anything else a wrapper changes in that "
                    "launch (argv, other variables) makes the run invalid. Interpreter and loader "
                    "variables (PYTHON*, LD_PRELOAD, LD_AUDIT) cannot be declared. Not part of the "
                    "resolved config: it says what may change the launch, not what the scripts read."
    )

    @field_validator("launch_env")
    @classmethod
    def _no_interpreter_variables(cls, names: frozenset[str]) -> frozenset[str]:
        refused = sorted(n for n in names if n.upper().startswith(UNDECLARABLE_ENV_PREFIXES))
        if refused:
            raise ValueError(f"launch_env may not name {', '.join(refused)}: variables that change "
                             "which code the interpreter loads stay the core's")
        return names

    def allowed_launch_env(self) -> frozenset[str]:
        """The variables a vendor's ``run`` wrapper may set in a built-in script's launch."""
        return self.launch_env | ({self.visible_devices_env} if self.visible_devices_env else set())

    @field_serializer("precisions")
    def _sorted_precisions(self, precisions: frozenset[str]) -> list[str]:
        return sorted(precisions)  # a set's order varies between processes; hashes must not

    def for_framework(self, library: str) -> FrameworkDevice | None:
        """The entry of one framework library (torch, paddle, mxnet), or None."""
        return self.frameworks.get(library)
