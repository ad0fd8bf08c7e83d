"""What plugins register: cases (benchmark definitions), frameworks and vendors."""

from __future__ import annotations

from typing import Literal, Union

from pydantic import BaseModel, ConfigDict, Field

from harness.models.device import DeviceBackend

ParamValue = Union[bool, int, float, str]
ModelParallel = Literal["tensor", "pipeline"]
#: Case parameters that ask for a model-parallel layout, and the dimension each names (the
#: parameter names of every built-in case; a case without them is data parallel).
MODEL_PARALLEL_PARAMS: dict[str, ModelParallel] = {
    "tensor_parallel_degree": "tensor", "pipeline_parallel_degree": "pipeline"}


class CaseSpec(BaseModel):
    """A benchmark case is data: a model, its default hyper-parameters and how it is reported.

    Framework plugins implement *models* (``model``); every framework that implements the
    model can run the case, so a case is comparable across frameworks by construction.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(description="Case name used on the command line, e.g. gpt3_6.7B.")
    model: str = Field(description="Model family a framework plugin implements, e.g. gpt.")
    description: str = Field("", description="One line shown by `harness list cases`.")
    headline: bool = Field(
        False, description="A case the seed documents headline (GPT-3 sizes, BERT-base, the "
                           "CNNs): `harness list cases` lists these first.")
    dataset: str = Field(description="Dataset kind prepare_data must provide, e.g. gpt-npy.")
    unit: str = Field(description="Throughput unit of FINAL_RESULT, e.g. tokens/s.")
    mission_name: str = Field(description="Legacy index JSON mission_name (task name).")
    direction_id: int = Field(description="Legacy direction id: 0 CV, 1 NLP, 2 Rec.")
    legacy_prefix: str = Field(
        description="repoName prefix of the legacy model_name, e.g. nlp in nlp_gpt3_6.7B_bs8_fp32."
    )
    settings: dict[str, ParamValue] = Field(
        default_factory=dict, description="Defaults for RunSettings fields (batch size, steps...)."
    )
    params: dict[str, ParamValue] = Field(
        default_factory=dict, description="Model and optimizer hyper-parameters."
    )
    smoke: dict[str, ParamValue] = Field(
        default_factory=dict,
        description="Overrides applied by --scale smoke: a few layers, short sequence, few steps.",
    )
    immutable: frozenset[str] = Field(
        default_factory=frozenset,
        description="Keys that identify the case; neither vendors nor --set may change them.",
    )
    vendor_overridable: frozenset[str] = Field(
        default_factory=frozenset,
        description="Keys a vendor per-case config may set (tuning knobs, not the model).",
    )
    ranges: dict[str, tuple[float | None, float | None]] = Field(
        default_factory=dict,
        description="Valid range (lowest, highest; None: unbounded) of numeric parameters, e.g. "
                    "{'dropout': (0, 1)}; a numeric parameter not named here must be finite and "
                    "at least 0. Checked when the config is resolved, before launch.",
    )
    uniform_loss_classes: tuple[Union[str, int], ...] = Field(
        (), description="The class counts of the cross-entropy terms the logged loss adds up: "
                        "parameter names or numbers, e.g. ('vocab_size',) for a language model, "
                        "('vocab_size', 2) for BERT's masked-LM plus next-sentence loss. The "
                        "uniform-guess loss, sum of their logarithms, is what the health check "
                        "requires the loss to be below after the first steps; empty: that rule "
                        "is not judged.")
    choices: dict[str, tuple[str, ...]] = Field(
        default_factory=dict,
        description="Allowed values of string parameters, e.g. {'recompute': ('none', "
                    "'selective', 'full')}; checked when the config is resolved, before launch.",
    )
    equivalence_settings: dict[str, ParamValue] = Field(
        default_factory=dict,
        description="Settings of `harness equivalence` runs on top of the case (applied like "
                    "--set), where frameworks cannot match otherwise: e.g. dropout 0, because no "
                    "two frameworks draw the same dropout masks.",
    )
    equivalence_precision: Literal["fp32", "fp64"] = Field(
        "fp32", description="Arithmetic of `harness equivalence` runs: fp64 where the case's "
                            "training amplifies fp32 rounding beyond use within a few steps (the "
                            "smoke CNNs), so that the check still separates rounding from a "
                            "different computation; the reason belongs in equivalence_notes.",
    )
    equivalence_growth: float = Field(
        1.0, ge=1.0, le=1e4,
        description="How many times a difference of the weights grows per optimizer step in "
                    "this case's training, measured (a perturbation of the initial weights, in "
                    "one framework); the loss tolerance of step t is multiplied by growth^(t-1). "
                    "1: no more than the first-order growth the tolerances already allow.",
    )
    equivalence_safety: float = Field(
        1.0, ge=1.0, le=1e3,
        description="Factor on every tolerance of `harness equivalence` for this case, where its "
                    "model loses more digits than the fp32/fp64 rounding estimate counts (e.g. "
                    "batch norm centring channels whose mean far exceeds their spread); measured, "
                    "and the measurement belongs in equivalence_notes. 1: the estimate.",
    )
    equivalence_notes: tuple[str, ...] = Field(
        (), description="Differences between the frameworks' implementations of this case that "
                        "are intentional (e.g. a fused kernel that rounds differently); "
                        "`harness equivalence` reports them with its verdict.",
    )

    @property
    def model_parallel(self) -> dict[ModelParallel, int]:
        """The model-parallel degrees the case asks for (``{"tensor": 16}``); empty for a
        data-parallel case."""
        degrees: dict[ModelParallel, int] = {}
        for key, dimension in MODEL_PARALLEL_PARAMS.items():
            value = self.params.get(key, 1)
            if isinstance(value, int) and not isinstance(value, bool) and value > 1:
                degrees[dimension] = value
        return degrees


class FrameworkSpec(BaseModel):
    """A framework a plugin can train with."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(description="Framework name used with --framework, e.g. pytorch.")
    description: str = Field("", description="One line about the framework, e.g. how it launches.")
    models: frozenset[str] = Field(description="Model families this framework implements.")
    log_format: str = Field(description="Name of the log format its training scripts print.")
    model_parallel: frozenset[ModelParallel] = Field(
        frozenset(), description="Model-parallel layouts its training scripts implement besides "
                                 "data parallel (tensor, pipeline); a case asking for another is "
                                 "not one this framework runs (`harness list cases` leaves it out).",
    )
    equivalence_models: frozenset[str] = Field(
        frozenset(), description="Model families whose training scripts implement the "
                                 "`equivalence` section of the resolved config (canonical "
                                 "initial state, neutral sample order, trace): `harness "
                                 "equivalence` runs these.",
    )


class VendorSpec(BaseModel):
    """A hardware vendor a plugin can discover devices for and launch on."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(description="Vendor name used with --vendor, e.g. nvidia.")
    description: str = Field("", description="One line shown by `harness list vendors`.")
    device_kind: str = Field(description="cpu, gpu, npu, ...")
    backend: DeviceBackend | None = Field(
        None, description="How the built-in frameworks' training processes use the devices "
                          "(device type strings, collective backend, precisions); a vendor "
                          "without one runs only frameworks of its own."
    )
