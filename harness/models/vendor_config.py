"""A vendor's per-case configuration file, as returned by ``vendor_case_config``."""

from __future__ import annotations

from pydantic import BaseModel, Field

from harness.models.case import ParamValue


class VendorCaseConfig(BaseModel):
    name: str = Field(description="e.g. config_TP1PP1SH2SP8A10080Gx1x8")
    path: str | None = None
    values: dict[str, ParamValue] = Field(description="Keys of settings or params to override.")
