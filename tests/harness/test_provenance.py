"""Provenance: plugins and their hooks from the router, script digests, code in the config hash
(with the fixture GPT framework and CPU vendor, tests/fixtures/plugins/harness_fixturegpt)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from harness import hookimpl
from harness.models import DeviceInfo, DeviceSet, VendorSpec
from harness.provenance import code_digests, plugin_source_files, run_provenance
from harness.runner.pipeline import RunRequest, plan
from tests.harness.core_harness import (
    FIXTURE_FRAMEWORK, FIXTURE_VENDOR, core_harness, fixture_harness, fixture_plugins,
)

FRAMEWORK_PLUGIN, VENDOR_PLUGIN = "harness_fixturegpt.framework", "harness_fixturegpt.vendor"


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


def _plan(harness, tmp_path, vendor=FIXTURE_VENDOR):
    request = RunRequest(case="gpt3_125M", vendor=vendor, framework=FIXTURE_FRAMEWORK, scale="smoke",
                         output=tmp_path / "results", cache_dir=tmp_path / "cache")
    return plan(harness, request)


def _sha256(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def test_the_router_records_who_implemented_or_wrapped_each_hook():
    harness = fixture_harness(AcmeVendor())
    router = harness.router()
    router.discover_devices("acme")
    router.note("run", {router.framework_owner(FIXTURE_FRAMEWORK), router.vendor_owner("acme")})
    used = router.hooks_by_plugin()
    acme = router.vendor_owner("acme")
    assert used[acme] == {"discover_devices": "implemented", "run": "wrapped"}
    assert used[FRAMEWORK_PLUGIN] == {"run": "implemented"}
    assert VENDOR_PLUGIN not in used  # another vendor's plugin took no part

    provenance = run_provenance(router, [__file__], None)
    records = {p.name: p for p in provenance.plugins}
    assert records[acme].builtin is False and records[acme].hooks["run"] == "wrapped"
    assert records[FRAMEWORK_PLUGIN].builtin is False and records[FRAMEWORK_PLUGIN].hooks == {"run": "implemented"}
    assert records["harness_cases.plugin"].builtin and records["harness_cases.plugin"].version
    assert list(provenance.scripts.values())[0] == _sha256(__file__)


def test_a_plugins_source_is_its_package_with_its_scripts(gpt_harness):
    names = {p.name for p in plugin_source_files(gpt_harness, FRAMEWORK_PLUGIN)}
    # the package's files, the other plugin module of the package too, no byte-compiled caches
    assert {"__init__.py", "framework.py", "vendor.py", "train_gpt.py", "default.toml"} == names
    assert "readback.py" in {p.name for p in plugin_source_files(gpt_harness, "harness_cases.plugin")}
    assert plugin_source_files(gpt_harness, "no.such.plugin") == []


def test_config_hash_covers_the_plugin_set_and_the_code(gpt_harness, tmp_path, monkeypatch):
    context = _plan(gpt_harness, tmp_path)
    assert {"plugins", f"source:{FRAMEWORK_PLUGIN}", f"source:{VENDOR_PLUGIN}",
            "source:harness_cases.plugin"} <= set(context.config.code)
    assert _plan(gpt_harness, tmp_path).config.config_hash == context.config.config_hash  # stable

    # One more plugin loaded: a different config.
    other = fixture_harness(AcmeVendor())
    assert _plan(other, tmp_path).config.config_hash != context.config.config_hash

    # A changed training script: a different config.
    import harness.provenance as provenance

    script = next(p for p in plugin_source_files(gpt_harness, FRAMEWORK_PLUGIN) if p.name == "train_gpt.py")
    real = provenance._file_sha
    monkeypatch.setattr(provenance, "_file_sha",
                        lambda path: "changed" if path == script else real(path))
    changed = code_digests(gpt_harness, {FRAMEWORK_PLUGIN}, None)
    assert changed[f"source:{FRAMEWORK_PLUGIN}"] != context.config.code[f"source:{FRAMEWORK_PLUGIN}"]


def test_the_vendor_config_file_is_digested(tmp_path):
    config_file = tmp_path / "default.toml"
    config_file.write_text("[values]\nmicro_batch_size = 2\n")
    digests = code_digests(core_harness(), set(), str(config_file))
    assert digests["vendor_config"] == _sha256(config_file)


def test_script_paths_are_named_from_their_package_whatever_is_on_sys_path(monkeypatch):
    """A test or tool that puts a scripts folder on sys.path must not change the recorded name;
    nor does a package kept inside another package's folders (the fixture plugins in tests/)."""
    import sys

    from harness.provenance import display_path

    framework, _ = fixture_plugins()
    assert display_path(framework.SCRIPT) == "harness_fixturegpt/scripts/train_gpt.py"
    monkeypatch.setattr(sys, "path", [str(framework.SCRIPT.parent), *sys.path])
    assert display_path(framework.SCRIPT) == "harness_fixturegpt/scripts/train_gpt.py"
    assert display_path(Path(__file__)) == "tests/harness/test_provenance.py"


def test_the_vendor_config_is_named_from_its_package_not_this_machines_folders(gpt_harness, tmp_path):
    context = _plan(gpt_harness, tmp_path)
    config = Path(context.vendor_config_path)
    assert config.parts[-3:] == ("gpt3_125M", FIXTURE_FRAMEWORK, "default.toml")
    provenance = run_provenance(gpt_harness.router(context), [], str(config))
    assert provenance.vendor_config == "harness_fixturegpt/configs/gpt3_125M/fixturefw/default.toml"
    assert provenance.vendor_config_sha256 == _sha256(config)
    assert context.config.code["vendor_config"] == _sha256(config)


def test_a_runs_router_continues_the_record_of_the_router_that_planned_it(tmp_path):
    harness = fixture_harness(AcmeVendor())
    context = _plan(harness, tmp_path, vendor="acme")
    acme = harness.registry.vendors.owner("acme")
    assert harness.router().hooks_by_plugin() == {}
    planned = harness.router(context).hooks_by_plugin()
    assert planned[acme] == {"discover_devices": "implemented"}
    # a later copy of the context (a next repeat, another run id) keeps the planning record
    again = context.model_copy(update={"run_id": "other"})
    assert harness.router(again).hooks_by_plugin() == planned


def test_a_run_records_the_plugins_that_took_part_and_the_script_it_ran(gpt_harness, tmp_path):
    from harness.runner.pipeline import run_benchmark

    request = RunRequest(case="gpt3_125M", vendor=FIXTURE_VENDOR, scale="smoke",
                         output=tmp_path / "results", cache_dir=tmp_path / "cache")
    result = run_benchmark(gpt_harness, request).result
    assert result.status == "success" and result.framework == FIXTURE_FRAMEWORK
    hooks = {p.name: p.hooks for p in result.provenance.plugins}
    assert hooks[FRAMEWORK_PLUGIN] == {"run": "implemented"}
    assert hooks[VENDOR_PLUGIN] == {"discover_devices": "implemented", "vendor_case_config": "implemented",
                                    "run": "wrapped"}
    assert hooks["harness_cases.plugin"] == {"prepare_data": "implemented", "model_flops": "implemented"}
    framework, _ = fixture_plugins()
    assert result.provenance.scripts == {"harness_fixturegpt/scripts/train_gpt.py": _sha256(framework.SCRIPT)}
    assert result.config.hardware_config == "default"  # the fixture vendor's config for the case
