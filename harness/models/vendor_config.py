"""A vendor's per-case configuration file, as returned by ``vendor_case_config``."""

from __future__ import annotations

from pydantic import BaseModel, Field

from harness.models.case import ParamValue


class VendorCaseConfig(BaseModel):
    """A vendor's tuned values for one case, framework and layout (a ``[values]`` TOML table)."""

    name: str = Field(description="e.g. config_TP1PP1SH2SP8A10080Gx1x8")
    path: str | None = Field(None, description="File it was read from, if it came from a file.")
    values: dict[str, ParamValue] = Field(description="Keys of settings or params to override.")
