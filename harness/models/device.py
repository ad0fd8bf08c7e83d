"""Devices a vendor plugin discovered."""

from __future__ import annotations

from pydantic import BaseModel, Field


class DeviceInfo(BaseModel):
    """One device (a GPU, an NPU, the host CPU) as the vendor's driver numbers and names it."""

    index: int = Field(description="The driver's index of the device; what visible-devices variables list.")
    name: str = Field(description="Model name as the driver reports it, e.g. NVIDIA H200; peak-FLOPs tables key on it.")
    memory_bytes: int | None = Field(None, description="Device memory in bytes, if known.")
    uuid: str | None = Field(None, description="The driver's unique id of the device, if it has one.")


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
