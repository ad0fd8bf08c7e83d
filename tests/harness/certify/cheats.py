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


# ----------------------------------------------------------------------- launch and log cheats
# Each is a vendor of its own (the host CPU through torch, as tampering_vendors.HOST_CPU
# declares it) whose wrappers do the cheating.

import re  # noqa: E402
import sys  # noqa: E402
import textwrap  # noqa: E402
from pathlib import Path  # noqa: E402

from harness.models import DeviceInfo, DeviceSet, LaunchSpec, VendorSpec  # noqa: E402
from tests.harness.tampering_vendors import HOST_CPU  # noqa: E402


class CheatingVendor:
    """A vendor named ``name`` on the host CPU; subclasses add the cheat."""

    name = "cheatco"

    @hookimpl
    def register_vendors(self, register):
        register(VendorSpec(name=self.name, description="cheat suite vendor", device_kind="cpu",
                            backend=HOST_CPU))

    @hookimpl
    def discover_devices(self, vendor):
        return DeviceSet(vendor=self.name, kind="cpu", devices=[DeviceInfo(index=0, name="cpu")])


_ITERATION_TIME = re.compile(r"elapsed time per iteration \(ms\): ([\d.]+)")


class LogTimeEditor(CheatingVendor):
    """An ``execute`` wrapper that halves every step time in the log after the process exits."""

    name = "logedit"

    @hookimpl(wrapper=True)
    def execute(self, context, launch, log_path, observer):
        outcome = yield
        text = Path(log_path).read_text()
        Path(log_path).write_text(_ITERATION_TIME.sub(
            lambda m: f"elapsed time per iteration (ms): {float(m.group(1)) / 2:.1f}", text))
        return outcome


class SlowestLinesDeleter(CheatingVendor):
    """An ``execute`` wrapper that deletes the two slowest measured iteration lines."""

    name = "linedrop"

    @hookimpl(wrapper=True)
    def execute(self, context, launch, log_path, observer):
        outcome = yield
        lines = Path(log_path).read_text().splitlines(keepends=True)
        timed = sorted((float(m.group(1)), i) for i, line in enumerate(lines)
                       if (m := _ITERATION_TIME.search(line)))
        drop = {i for _, i in timed[-2:]}
        Path(log_path).write_text("".join(line for i, line in enumerate(lines) if i not in drop))
        return outcome


class SlowClock(CheatingVendor):
    """A ``run`` wrapper that puts a ``sitecustomize`` on PYTHONPATH making
    ``time.perf_counter`` (and ``time.time``) run at 0.6x inside the training process."""

    name = "slowclock"

    def __init__(self, folder: Path):
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "sitecustomize.py").write_text(textwrap.dedent("""
            import time
            _perf, _time = time.perf_counter, time.time
            _p0, _t0 = _perf(), _time()
            time.perf_counter = lambda: _p0 + (_perf() - _p0) * 0.6
            time.time = lambda: _t0 + (_time() - _t0) * 0.6
        """))

    @hookimpl(wrapper=True)
    def run(self, context, env, dataset):
        launch: LaunchSpec = yield
        path = f"{self.folder}:{launch.env.get('PYTHONPATH', '')}"
        return launch.model_copy(update={"env": {**launch.env, "PYTHONPATH": path}})


class Replayer(CheatingVendor):
    """A ``run`` wrapper that replaces the training with a stored honest log, printed at once."""

    name = "replay"

    def __init__(self, stored_log: Path):
        self.stored_log = stored_log

    @hookimpl(wrapper=True)
    def run(self, context, env, dataset):
        launch: LaunchSpec = yield
        code = f"import sys; sys.stdout.write(open({str(self.stored_log)!r}).read())"
        return launch.model_copy(update={"argv": [sys.executable, "-c", code]})


class ReadbackShadower(CheatingVendor):
    """A ``run`` wrapper that prepends a folder to ``PYTHONPATH`` holding its own
    ``readback.py``, which would print the expected read-back whatever the model built."""

    name = "shadow"

    def __init__(self, folder: Path):
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        shared = Path(__import__("harness_cases.shared_scripts", fromlist=["x"]).SHARED_SCRIPTS_DIR)
        # the real module, with the built model's layer count claimed whole
        (folder / "readback.py").write_text((shared / "readback.py").read_text()
                                            + "\n# shadowed by the vendor\n")

    @hookimpl(wrapper=True)
    def run(self, context, env, dataset):
        launch: LaunchSpec = yield
        path = f"{self.folder}:{launch.env.get('PYTHONPATH', '')}"
        return launch.model_copy(update={"env": {**launch.env, "PYTHONPATH": path}})


BF16_LINEAR = """
import torch, torch.nn.functional as F
_linear = F.linear
def linear(x, w, b=None):
    out = _linear(x.bfloat16(), w.bfloat16(), None if b is None else b.bfloat16())
    return out.to(x.dtype)
F.linear = linear
"""


class Bf16LinearUserSite(CheatingVendor):
    """A ``run`` wrapper that points ``PYTHONUSERBASE`` at a user site whose ``usercustomize``
    runs every ``F.linear`` in bf16 while the run claims fp32."""

    name = "bf16site"

    def __init__(self, folder: Path):
        self.folder = folder
        site = folder / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
        site.mkdir(parents=True, exist_ok=True)
        (site / "usercustomize.py").write_text(BF16_LINEAR)

    @hookimpl(wrapper=True)
    def run(self, context, env, dataset):
        launch: LaunchSpec = yield
        return launch.model_copy(update={"env": {**launch.env, "PYTHONUSERBASE": str(self.folder)}})


class ExecuteReplayer(CheatingVendor):
    """An ``execute`` of its own (not a wrapper) that stands in for the core's: it replays a
    stored honest log into the log file and the observer, and no training runs."""

    name = "execreplay"

    def __init__(self, stored_log: Path):
        self.stored_log = stored_log

    @hookimpl(tryfirst=True)
    def execute(self, context, launch, log_path, observer):
        from datetime import datetime, timezone

        from harness.models import ProcessOutcome

        text = self.stored_log.read_text()
        Path(log_path).parent.mkdir(parents=True, exist_ok=True)
        Path(log_path).write_text(text)
        for line in text.splitlines(keepends=True):
            observer.on_line(line)
        now = datetime.now(timezone.utc)
        return ProcessOutcome(status="success", exit_code=0, log_path=str(log_path),
                              started_at=now, finished_at=now)


class PeakLowerer(CheatingVendor):
    """Declares a peak 4x below the device's own (MFU 4x inflated)."""

    name = "lowpeak"

    def __init__(self, device_peak: float):
        self.declared = device_peak / 4

    @hookimpl
    def device_peak_flops(self, devices, precision):
        return self.declared
