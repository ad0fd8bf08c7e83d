"""Provenance: plugins and their hooks from the router, script digests, code in the config hash."""

from __future__ import annotations

from harness import hookimpl
from harness.models import DeviceInfo, DeviceSet, VendorSpec
from harness.app import Harness
from harness.provenance import code_digests, plugin_source_files, run_provenance
from harness.runner.pipeline import RunRequest, plan


class AcmeVendor:
    @hookimpl
    def register_vendors(self, register):
        register(VendorSpec(name="acme", device_kind="cpu"))

    @hookimpl
    def discover_devices(self, vendor):
        return DeviceSet(vendor="acme", kind="cpu", devices=[DeviceInfo(index=0, name="acme0")])

    @hookimpl(wrapper=True)
    def run(self, context, env, dataset):
        return (yield)


def _plan(harness, tmp_path, vendor="cpu"):
    request = RunRequest(case="gpt3_125M", vendor=vendor, framework="pytorch", scale="smoke",
                         output=tmp_path / "results", cache_dir=tmp_path / "cache")
    return plan(harness, request)


def test_the_router_records_who_implemented_or_wrapped_each_hook():
    harness = Harness.load(load_entrypoints=False, extra=(AcmeVendor(),))
    router = harness.router()
    router.discover_devices("acme")
    router.note("run", {router.framework_owner("pytorch"), router.vendor_owner("acme")})
    used = router.hooks_by_plugin()
    acme = router.vendor_owner("acme")
    assert used[acme] == {"discover_devices": "implemented", "run": "wrapped"}
    assert used["harness_pytorch.plugin"] == {"run": "implemented"}
    assert "harness_cpu.plugin" not in used  # another vendor's plugin took no part

    provenance = run_provenance(router, [__file__], None)
    records = {p.name: p for p in provenance.plugins}
    assert records[acme].builtin is False and records[acme].hooks["run"] == "wrapped"
    assert records["harness_pytorch.plugin"].builtin and records["harness_pytorch.plugin"].version
    assert list(provenance.scripts.values())[0] == __import__("hashlib").sha256(
        open(__file__, "rb").read()).hexdigest()


def test_a_plugins_source_is_its_package_with_its_scripts():
    harness = Harness.load(load_entrypoints=False)
    names = {p.name for p in plugin_source_files(harness, "harness_pytorch.plugin")}
    assert {"plugin.py", "train_gpt.py", "gpt_model.py"} <= names
    assert "readback.py" in {p.name for p in plugin_source_files(harness, "harness_cases.plugin")}


def test_config_hash_covers_the_plugin_set_and_the_code(tmp_path, monkeypatch):
    harness = Harness.load(load_entrypoints=False)
    context = _plan(harness, tmp_path)
    assert {"plugins", "source:harness_pytorch.plugin", "source:harness_cpu.plugin",
            "source:harness_cases.plugin"} <= set(context.config.code)
    assert _plan(harness, tmp_path).config.config_hash == context.config.config_hash  # stable

    # One more plugin loaded: a different config.
    other = Harness.load(load_entrypoints=False, extra=(AcmeVendor(),))
    assert _plan(other, tmp_path).config.config_hash != context.config.config_hash

    # A changed training script: a different config.
    import harness.provenance as provenance

    script = next(p for p in plugin_source_files(harness, "harness_pytorch.plugin") if p.name == "train_gpt.py")
    real = provenance._file_sha
    monkeypatch.setattr(provenance, "_file_sha",
                        lambda path: "changed" if path == script else real(path))
    changed = code_digests(harness, {"harness_pytorch.plugin"}, None)
    assert changed["source:harness_pytorch.plugin"] != context.config.code["source:harness_pytorch.plugin"]


def test_the_vendor_config_file_is_digested(tmp_path):
    config_file = tmp_path / "default.toml"
    config_file.write_text("[values]\nmicro_batch_size = 2\n")
    harness = Harness.load(load_entrypoints=False)
    digests = code_digests(harness, set(), str(config_file))
    assert digests["vendor_config"] == __import__("hashlib").sha256(config_file.read_bytes()).hexdigest()


def test_script_paths_are_named_from_their_package_whatever_is_on_sys_path(monkeypatch):
    """A test or tool that puts a scripts folder on sys.path must not change the recorded name."""
    import sys
    from pathlib import Path

    import harness_pytorch

    from harness.provenance import display_path

    script = Path(harness_pytorch.__file__).parent / "scripts" / "train_gpt.py"
    assert display_path(script) == "harness_pytorch/scripts/train_gpt.py"
    monkeypatch.setattr(sys, "path", [str(script.parent), *sys.path])
    assert display_path(script) == "harness_pytorch/scripts/train_gpt.py"


def test_the_vendor_config_is_named_from_its_package_not_this_machines_folders():
    from pathlib import Path

    import harness_nvidia

    harness = Harness.load(load_entrypoints=False)
    router = harness.router()
    config = next((Path(harness_nvidia.__file__).parent / "configs").rglob("*.toml"))
    provenance = run_provenance(router, [], str(config))
    assert provenance.vendor_config.startswith("harness_nvidia/configs/")
    assert provenance.vendor_config_sha256 == __import__("hashlib").sha256(config.read_bytes()).hexdigest()


def test_a_runs_router_continues_the_record_of_the_router_that_planned_it(tmp_path):
    harness = Harness.load(load_entrypoints=False, extra=(AcmeVendor(),))
    context = _plan(harness, tmp_path, vendor="acme")
    acme = harness.registry.vendors.owner("acme")
    assert harness.router().hooks_by_plugin() == {}
    planned = harness.router(context).hooks_by_plugin()
    assert planned[acme] == {"discover_devices": "implemented"}
    # a later copy of the context (a next repeat, another run id) keeps the planning record
    again = context.model_copy(update={"run_id": "other"})
    assert harness.router(again).hooks_by_plugin() == planned
