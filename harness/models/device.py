"""Devices a vendor plugin discovered."""

from __future__ import annotations

from pydantic import BaseModel, Field


class DeviceInfo(BaseModel):
    index: int
    name: str
    memory_bytes: int | None = None
    uuid: str | None = None


class DeviceSet(BaseModel):
    """What a vendor found on this machine; recorded in every result."""

    vendor: str
    kind: str = Field(description="cpu, gpu, ...")
    devices: list[DeviceInfo]
    driver_version: str | None = None
    runtime_version: str | None = Field(None, description="e.g. the CUDA version the driver supports.")
    interconnect: str | None = None
    visible_devices_env: str | None = Field(
        None, description="Environment variable that selects devices, e.g. CUDA_VISIBLE_DEVICES."
    )

    @property
    def count(self) -> int:
        return len(self.devices)
