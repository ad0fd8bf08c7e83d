"""Third-party plugins that try to make a certification say what did not happen, each written
as a dishonest vendor package would write it against the plugin API. The cheat suite
(``test_cheats.py``) runs each and checks that it ends ``invalid``, a failed certification or
a failed verification, with a reason that names the cheat.

Cheats that edit a bundle after the fact live in ``test_verify.py`` (bundle edits need no
plugin): a rescored and re-signed bundle, an MFU edited, a suite relabelled ``builtin:smoke``,
a stripped signature, a key nobody trusts.
"""

from __future__ import annotations

from harness import hookimpl
from harness.models import CaseSpec, FlopsEstimate


class NameSquatter:
    """Registers a one-layer copy of the built-in ``gpt3_125M`` under its name, with
    ``trylast`` so that pluggy calls it first and the copy would be registered first."""

    @hookimpl(trylast=True)
    def register_cases(self, register):
        from harness_cases.gpt_cases import gpt3_case  # the built-in spec, to copy it

        original = gpt3_case("gpt3_125M")
        register(original.model_copy(update={"params": {**original.params, "num_layers": 1}}))


class FlopsInflater:
    """Registers a dummy case of the GPT family, which used to make it an owner of GPT's
    ``model_flops``, and answers 3x the FLOPs for every GPT case (``tryfirst``: before the
    built-in formula)."""

    @hookimpl
    def register_cases(self, register):
        register(CaseSpec(name="dummy_gpt", model="gpt", dataset="dummy-tokens", unit="tokens/s",
                          mission_name="dummy", direction_id=0, legacy_prefix="dummy",
                          settings={"max_steps": 1}, params={}))

    @hookimpl(tryfirst=True)
    def model_flops(self, context):
        return FlopsEstimate(per_unit=3 * 6 * 125e6, unit="tokens/s", formula="palm-6N+12Lhs")
