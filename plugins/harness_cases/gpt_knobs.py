"""The GPT cases' run-time knobs as a typed model, for the framework plugins that read them.

The defaults are ``shared_scripts.gpt_knobs.GPT_KNOB_DEFAULTS`` (one place, which the training
scripts read too); the cases' params start from them and ``GPT_CHOICES`` (the values config
resolution accepts) comes from the fields' types.
"""

from __future__ import annotations

from typing import Literal, Mapping, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.errors import UserInputError, first_validation_error
from harness_cases.shared_scripts.gpt_knobs import GPT_KNOB_DEFAULTS

_D = GPT_KNOB_DEFAULTS


class GptKnobs(BaseModel):
    """What a GPT run's params say about how to train (not what to train)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    recompute: Literal["none", "selective", "full"] = _D["recompute"]  # type: ignore[assignment]
    compile: bool = _D["compile"]  # type: ignore[assignment]
    fused_optimizer: bool = _D["fused_optimizer"]  # type: ignore[assignment]
    attention_backend: Literal["auto", "flash", "cudnn", "efficient", "local"] = \
        _D["attention_backend"]  # type: ignore[assignment]
    offload: Literal["none", "cpu"] = _D["offload"]  # type: ignore[assignment]
    master_weights: Literal["model", "optimizer"] = _D["master_weights"]  # type: ignore[assignment]
    gradient_accumulation_fusion: bool = _D["gradient_accumulation_fusion"]  # type: ignore[assignment]
    sharding_stage: int = Field(_D["sharding_stage"], ge=0, le=3)
    sharding_degree: int = Field(_D["sharding_degree"], ge=0)
    # Not bounded here: a plugin refuses a degree its launch cannot build with its own reason.
    tensor_parallel_degree: int = _D["tensor_parallel_degree"]  # type: ignore[assignment]
    pipeline_parallel_degree: int = _D["pipeline_parallel_degree"]  # type: ignore[assignment]

    @classmethod
    def of(cls, params: Mapping[str, object]) -> GptKnobs:
        """The knobs of a resolved config's params (other params ignored); a value of the
        wrong kind is a one-line UserInputError."""
        try:
            return cls.model_validate({name: params[name] for name in cls.model_fields
                                       if params.get(name) is not None})
        except ValidationError as exc:
            where, message, value = first_validation_error(exc)
            raise UserInputError(f"{where}={value!r}: {message}") from None


#: Values config resolution accepts for the knobs that take one of a few words.
GPT_CHOICES: dict[str, tuple[str, ...]] = {
    name: get_args(field.annotation) for name, field in GptKnobs.model_fields.items()
    if getattr(field.annotation, "__origin__", None) is Literal
}
