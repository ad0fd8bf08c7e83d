"""docs/plugins.md's "A vendor plugin in one file" runs as written: extracted from the guide,
imported as a module (with a stand-in for the imaginary chip's ``acme_smi`` driver binding),
loaded as a plugin, and driven through discovery, planning, the peak and its run wrapper."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

from harness.app import Harness
from harness.models import DatasetInfo, ExecutionEnv
from harness.runner.pipeline import RunRequest, plan
from harness.runner.sealed_launch import vendor_changes

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "plugins.md"


def guide_example() -> str:
    """The first python block after the heading "A vendor plugin in one file"."""
    section = GUIDE.read_text(encoding="utf-8").split("## A vendor plugin in one file", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def _acme_smi():
    chip = types.SimpleNamespace(index=0, name="Acme N1", memory_bytes=32 << 30)
    module = types.ModuleType("acme_smi")
    module.list_chips = lambda: [chip, types.SimpleNamespace(index=1, name="Acme N1", memory_bytes=32 << 30)]
    module.driver_version = lambda: "1.2.3"
    return module


def test_the_vendor_in_one_file_runs_as_written(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "acme_smi", _acme_smi())
    plugin_file = tmp_path / "harness_acme_plugin.py"
    plugin_file.write_text(guide_example(), encoding="utf-8")
    (tmp_path / "configs").mkdir()
    monkeypatch.syspath_prepend(str(tmp_path))
    import harness_acme_plugin as acme

    harness = Harness.load(load_entrypoints=False, extra=(acme,))
    router = harness.router()
    devices = router.discover_devices("acme")
    assert [d.name for d in devices.devices] == ["Acme N1", "Acme N1"]
    assert router.device_peak_flops(devices, "bf16") == 400e12

    # Planned for the built-in PyTorch framework: the backend reaches the resolved config.
    context = plan(harness, RunRequest(case="gpt3_125M", vendor="acme", scale="smoke", nproc=1,
                                       output=tmp_path / "results"))
    assert context.config.device.frameworks["torch"].device_type == "npu"
    router = harness.router(context)
    env = ExecutionEnv(python=sys.executable, framework="pytorch")
    dataset = DatasetInfo(kind="gpt-npy", path=str(tmp_path), files=["data_ids.npy"], synthesized=True)
    framework = router.framework_launch(context, env, dataset)
    launch = router.run(context, env, dataset)
    assert launch.env["ACME_VISIBLE_DEVICES"] == "0"
    # What the wrapper adds is what its backend declares: the core launches it as it is.
    backend = harness.registry.vendors.get("acme").backend
    assert vendor_changes(framework, launch, backend.allowed_launch_env()) == []


def test_the_packaging_example_names_the_distribution():
    text = GUIDE.read_text(encoding="utf-8")
    assert 'dependencies = ["harness-bench"]' in text and 'dependencies = ["harness"]' not in text
    assert 'name = "harness-bench"' in (GUIDE.parents[1] / "pyproject.toml").read_text(encoding="utf-8")
