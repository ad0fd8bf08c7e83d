"""The resolved configuration of one run: case defaults < vendor config < CLI overrides."""

from __future__ import annotations

import hashlib
import json
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field, field_validator, model_validator

from harness.models.case import ParamValue
from harness.models.device import DeviceBackend

def _without(data, keys):
    if isinstance(data, dict) and any(k in data for k in keys):
        return {k: v for k, v in data.items() if k not in keys}
    return data


Precision = Literal["fp32", "fp16", "bf16", "fp8"]
Scale = Literal["full", "smoke"]
#: sp: one process; mp: several (any world size above 1).
RunMode = Literal["sp", "mp"]
#: Settings of the software a run executes in rather than of its work: every vendor config may
#: set them for every case (a vendor picks the framework build for its devices).
VENDOR_SETTINGS: frozenset[str] = frozenset({"framework_requirement"})


def pip_requirement(text: str) -> str:
    """``text`` as a pip (PEP 508) requirement in its normal spelling (``a==1`` for
    ``a == 1``); ValueError with a one-line reason and an example otherwise."""
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        return str(Requirement(text.strip()))
    except InvalidRequirement as exc:
        reason = str(exc).splitlines()[0]  # the rest draws a caret under the text
        raise ValueError(f"not a pip requirement ({reason}); expected e.g. "
                         "paddlepaddle-gpu==2.6.2") from None


#: Upper bound of batch sizes, accumulation steps, processes and nodes (2**20): far above any
#: real run, far below what overflows a training script's 64-bit integers.
MAX_COUNT = 2**20
MAX_STEPS = 10**9


class RunSettings(BaseModel):
    """Knobs every framework understands. Case-specific hyper-parameters live in ``params``."""

    # NaN and infinity are no timeout; every count has an upper bound a machine can hold
    model_config = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False)

    @model_validator(mode="before")
    @classmethod
    def _drop_computed(cls, data):
        # Serialised results carry the computed fields; reading them back must not fail.
        return _without(data, ("world_size", "run_mode", "global_batch_size"))

    precision: Precision = Field("fp32", description="Training precision.")
    micro_batch_size: int = Field(8, ge=1, le=MAX_COUNT, description="Per-process batch size of one step.")
    grad_accum_steps: int = Field(1, ge=1, le=MAX_COUNT, description="Micro-batches per optimizer step.")
    max_steps: int = Field(100, ge=1, le=MAX_STEPS, description="Optimizer steps to run.")
    skip_steps: int = Field(
        10, ge=0, le=MAX_STEPS, description="Unstable warm-up steps left out of FINAL_RESULT."
    )
    nproc: int = Field(1, ge=1, le=MAX_COUNT, description="Processes (devices) per node.")
    nnodes: int = Field(1, ge=1, le=MAX_COUNT, description="Nodes.")
    seed: int = Field(1234, ge=0, le=2**32 - 1,
                      description="Random seed of the training and of synthetic data.")
    timeout_s: float = Field(7200.0, gt=0, description="Overall wall-clock limit of the run.")
    hang_timeout_s: float = Field(
        900.0, gt=0, description="Limit on time without any output before the run counts as hung."
    )
    rendezvous_timeout_s: float = Field(
        300.0, gt=0, description="How long a node waits for the others to join before a "
                                 "multi-node job fails, and how long a rank waits in one "
                                 "collective (the PyTorch and Megatron process groups' timeout).",
    )
    framework_requirement: str | None = Field(
        None, description="The framework to install into the run's isolated environment, as a "
                          "pip requirement (paddlepaddle-gpu==2.6.2) in place of the framework "
                          "plugin's own for the vendor; None (or empty) keeps the plugin's. Part "
                          "of the environment's cache key and of the config hash.",
    )

    @field_validator("framework_requirement")
    @classmethod
    def _framework_requirement(cls, value: str | None) -> str | None:
        return pip_requirement(value) if value and value.strip() else None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def world_size(self) -> int:
        """Processes in all: nproc x nnodes."""
        return self.nproc * self.nnodes

    @computed_field  # type: ignore[prop-decorator]
    @property
    def run_mode(self) -> RunMode:
        """sp for one process, mp for several."""
        return "sp" if self.world_size == 1 else "mp"

    @computed_field  # type: ignore[prop-decorator]
    @property
    def global_batch_size(self) -> int:
        """Samples per optimizer step: micro batch x accumulation x world size."""
        return self.micro_batch_size * self.grad_accum_steps * self.world_size


class EquivalenceSetting(BaseModel):
    """What a training script does in a ``harness equivalence`` run (its config's
    ``equivalence`` section; the framework side is ``harness_cases/shared_scripts/equivalence.py``)."""

    model_config = ConfigDict(extra="forbid")

    trace: str = Field(description="JSON file the script writes: parameter shapes, per-layer "
                                    "activation checksums of the first batch, the loss of every "
                                    "step, step 1's gradient norms.")
    final_state: str = Field(description="The parameters after the last step (.npz, canonical names).")
    export_state: str | None = Field(
        None, description="Write the initial parameters here (.npz, canonical names) before step 1.")
    initial_state: str | None = Field(
        None, description="Replace the initial parameters with these (.npz, canonical names) "
                          "before step 1.")
    precision: Literal["fp32", "fp64"] = Field(
        "fp32", description="Arithmetic of the check run (the case's equivalence_precision): "
                            "fp64 builds the model, its data and optimizer in float64 and rounds "
                            "the optimizer's hyper-parameters to float32 values, which some "
                            "frameworks' optimizer kernels take.")
    growth: float = Field(1.0, description="The case's equivalence_growth, recorded in the trace "
                                           "for the loss tolerances.")
    safety: float = Field(1.0, description="The case's equivalence_safety, recorded in the trace "
                                           "for the tolerances.")


class ResolvedConfig(BaseModel):
    """Everything that determines a run; saved with the result together with its hash."""

    model_config = ConfigDict(extra="forbid")

    case: str = Field(description="Case name.")
    model: str = Field(description="Model family of the case.")
    framework: str = Field(description="Framework that trains it.")
    vendor: str = Field(description="Vendor whose devices it runs on.")
    scale: Scale = Field("full", description="full, or smoke for the shrunk preset.")
    hardware_config: str | None = Field(
        None, description="Name of the vendor per-case config that was applied, if any."
    )
    settings: RunSettings = Field(description="Knobs every framework understands.")
    params: dict[str, ParamValue] = Field(description="The case's model and optimizer hyper-parameters.")
    device: DeviceBackend | None = Field(
        None, description="The vendor's device backend (VendorSpec.backend): the training "
                          "scripts read their device type, collective backend and precisions "
                          "from it.",
    )
    sources: dict[str, str] = Field(
        default_factory=dict,
        description="Where each value that is not the case's default came from: smoke (the "
                    "--scale smoke preset), vendor:<config name> (the vendor per-case config, "
                    "named by hardware_config), cli (the command line of a run or a sweep: an "
                    "option, --set, the case string), sweep:<file name> (a sweep file's value), "
                    "devices:<vendor> (a process per device of the vendor), slurm (the node count "
                    "of the Slurm step, under --launcher slurm), memory-planner "
                    "(changed to fit device memory), suite:<name> (a certification suite's "
                    "setting).",
    )
    equivalence: EquivalenceSetting | None = Field(
        None, description="Set by `harness equivalence` only: the script loads or exports the "
                          "canonical initial state, trains on the neutral sample order and writes "
                          "a trace for the cross-framework comparison.",
    )
    code: dict[str, str] | None = Field(
        None,
        description="sha256 digests of the code and files that run this config: 'plugins' (the "
                    "loaded plugin set: names, distributions, versions), 'source:<plugin>' (the "
                    "files of each plugin that owns a hook of the run, its training scripts "
                    "included), 'vendor_config' (the vendor config file). Part of the config hash: "
                    "a changed script or plugin set is a different config. None for ingested logs.",
    )

    @model_validator(mode="before")
    @classmethod
    def _drop_computed(cls, data):
        return _without(data, ("config_hash",))

    @computed_field  # type: ignore[prop-decorator]
    @property
    def config_hash(self) -> str:
        """sha256 of what determines the run (not where values came from)."""
        settings_excluded = {"world_size", "run_mode", "global_batch_size", "timeout_s",
                             "hang_timeout_s", "rendezvous_timeout_s"}
        if self.settings.framework_requirement is None:  # configs from before it keep their hash
            settings_excluded.add("framework_requirement")
        payload = {
            "case": self.case,
            "framework": self.framework,
            "vendor": self.vendor,
            "scale": self.scale,
            "settings": self.settings.model_dump(exclude=settings_excluded),
            "params": self.params,
        }
        if self.equivalence is not None:  # a check run, not the benchmark's own
            payload["equivalence"] = True
        if self.code is not None:  # results recorded before code digests keep their hash
            payload["code"] = self.code
        if self.device is not None:  # how the scripts reach the devices changes the run
            payload["device"] = self.device.model_dump(mode="json")
        blob = json.dumps(payload, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:16]
