"""``certify verify`` on a real recorded bundle: intact and signed by a trusted key passes
(exit 0); tampering (exit 3), a failing check (1), no signature (4) and an unknown signer (5)
each have their code and name what they found; bad input is one line and exit 2."""

from __future__ import annotations

import json

import pytest

from harness.certify.verify import (
    EXIT_CHECK_FAILED,
    EXIT_TAMPERED,
    EXIT_UNKNOWN_KEY,
    EXIT_UNSIGNED,
    EXIT_VERIFIED,
)
from harness.cli.main import main
from tests.harness.certify.fixture_bundle import BUNDLE, PUBLIC_KEY, first_run, repack, unpack


def verify(capsys, *args) -> tuple[int, str, str]:
    code = main(["certify", "verify", *map(str, args)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_the_recorded_bundle_verifies(capsys):
    code, out, _ = verify(capsys, BUNDLE, "--pubkey", PUBLIC_KEY)
    assert code == EXIT_VERIFIED, out
    assert "signed by the trusted key --pubkey" in out
    for name in ("suite", "rules", "read_back", "repeats", "noise", "convergence", "health", "system"):
        assert f"pass {name}" in out


def test_a_log_whose_loss_spikes_fails_the_health_check_even_when_re_signed(tmp_path, capsys):
    """A run whose training diverged is not certified: one logged loss raised far above the
    first (the throughput figures untouched), re-manifested and re-signed. The witness catches
    the edit; the health check, judged on the re-parsed log, fails the point as well."""
    import re

    folder = unpack(tmp_path)
    log = first_run(folder) / "train.log"
    text = log.read_text()
    line = next(x for x in text.splitlines() if re.search(r"iteration\s+8/", x))
    spiked = re.sub(r"lm loss: \S+ ", "lm loss: 3.000000E+01 ", line)
    log.write_text(text.replace(line, spiked))
    forged = repack(folder, tmp_path / "spiked.tar.gz")
    code, out, _ = verify(capsys, forged, "--pubkey", PUBLIC_KEY)
    assert code == EXIT_TAMPERED and "FAIL health" in out
    assert "unhealthy: loss 30 at step 8 is above the first loss" in out
    assert "check health [gpt3_125M-pytorch-1x1] claimed True, recomputed False" in out


def test_an_unknown_signer_and_a_stripped_signature_have_their_own_codes(tmp_path, capsys, monkeypatch):
    from harness.certify.signing import TRUST_FILE_ENV

    monkeypatch.setenv(TRUST_FILE_ENV, str(tmp_path / "no-trust-file"))
    code, out, _ = verify(capsys, BUNDLE)
    assert code == EXIT_UNKNOWN_KEY and "signed by an unknown key" in out.splitlines()[-1]
    folder = unpack(tmp_path)
    (folder / "SIGNATURE").unlink()
    (folder / "PUBLIC_KEY").unlink()
    stripped = tmp_path / "stripped.tar.gz"
    import tarfile

    with tarfile.open(stripped, "w:gz") as tar:
        tar.add(folder, arcname=folder.name)
    code, out, _ = verify(capsys, stripped, "--pubkey", PUBLIC_KEY)
    assert code == EXIT_UNSIGNED and "is unsigned" in out.splitlines()[-1]
    trust = tmp_path / "trusted-keys.pem"
    trust.write_text("# the test lab\n" + PUBLIC_KEY.read_text())
    code, out, _ = verify(capsys, BUNDLE, "--trust", trust)
    assert code == EXIT_VERIFIED and "signed by the trusted key the test lab" in out


def test_a_flipped_byte_in_a_log_fails_naming_it(tmp_path, capsys):
    import tarfile

    folder = unpack(tmp_path)
    log = first_run(folder) / "train.log"
    data = bytearray(log.read_bytes())
    data[200] ^= 0x01
    log.write_bytes(bytes(data))
    forged = tmp_path / "flipped.tar.gz"
    with tarfile.open(forged, "w:gz") as tar:  # packed without re-manifesting
        tar.add(folder, arcname=folder.name)
    code, out, _ = verify(capsys, forged, "--pubkey", PUBLIC_KEY)
    rel = log.relative_to(folder).as_posix()
    assert code == EXIT_TAMPERED and f"{rel}: sha256 differs from the manifest" in out


def test_an_edited_final_result_fails_even_when_re_signed(tmp_path, capsys):
    """A forger with the key re-signs; the re-parsed log still disagrees with the claim."""
    folder = unpack(tmp_path)
    result_path = first_run(folder) / "result.json"
    result = json.loads(result_path.read_text())
    result["throughput"]["value"] *= 1.5
    result_path.write_text(json.dumps(result))
    forged = repack(folder, tmp_path / "forged.tar.gz")
    code, out, _ = verify(capsys, forged, "--pubkey", PUBLIC_KEY)
    rel = result_path.relative_to(folder).as_posix()
    assert code == EXIT_TAMPERED and "FAIL integrity" in out and f"{rel}: FINAL_RESULT" in out


def test_an_edited_legacy_index_fails(tmp_path, capsys):
    folder = unpack(tmp_path)
    index = next((first_run(folder) / "index").iterdir())
    data = json.loads(index.read_text())
    data["FINAL_RESULT"] = data["FINAL_RESULT"] * 2
    index.write_text(json.dumps(data))
    code, out, _ = verify(capsys, repack(folder, tmp_path / "forged.tar.gz"))
    assert code == EXIT_TAMPERED and f"index/{index.name}: FINAL_RESULT" in out


def test_a_claimed_verdict_that_does_not_follow_fails(tmp_path, capsys):
    folder = unpack(tmp_path)
    cert_path = folder / "certification.json"
    cert = json.loads(cert_path.read_text())
    cert["summaries"][0]["score"] *= 1.2
    cert_path.write_text(json.dumps(cert))
    code, out, _ = verify(capsys, repack(folder, tmp_path / "forged.tar.gz"))
    assert code == EXIT_TAMPERED and "certification.json:" in out and "score claimed" in out


def test_a_claimed_pass_its_own_checks_contradict_is_tampering(tmp_path, capsys):
    folder = unpack(tmp_path)
    cert_path = folder / "certification.json"
    cert = json.loads(cert_path.read_text())
    cert["checks"][-1]["passed"] = False  # the claim keeps "passed": true
    cert_path.write_text(json.dumps(cert))
    code, out, _ = verify(capsys, repack(folder, tmp_path / "forged.tar.gz"), "--pubkey", PUBLIC_KEY)
    assert code == EXIT_TAMPERED and "claims pass, its own checks say fail" in out


def test_a_band_recorded_again_since_the_bundle_turns_convergence_without_tampering(capsys, monkeypatch):
    """The convergence check is judged against the verifier's committed band; a band recorded
    again (narrower, moved) fails the repeats it had passed: the verdict is the recomputed one
    (a check fails, exit 1) and the differing claim is a note, not tampering (exit 3)."""
    from harness.certify import convergence

    real = convergence.load_reference

    def moved(*args, **kwargs):
        reference = real(*args, **kwargs)
        bands = [band.model_copy(update={"low": band.high, "high": band.high + 0.01})
                 for band in reference.bands]
        return reference.model_copy(update={"bands": bands})

    monkeypatch.setattr(convergence, "load_reference", moved)
    code, out, _ = verify(capsys, BUNDLE, "--pubkey", PUBLIC_KEY)
    assert code == EXIT_CHECK_FAILED, out
    assert "FAIL convergence" in out and "note: certification.json: check convergence" in out
    assert "claimed True, recomputed False" in out and "claim:" not in out


def test_a_locked_value_changed_in_the_catalog_since_the_bundle_fails_rules_without_tampering(
        capsys, monkeypatch):
    """The rules are judged against the verifier's case catalog; a locked value changed there
    since the bundle was made (a case's learning rate) fails the rules with nothing in the bundle
    altered: the verdict is the recomputed one (a check fails, exit 1) and the differing claim
    is a note, not tampering (exit 3)."""
    from harness.certify import rules

    real = rules.reference_config

    def changed(*args, **kwargs):
        reference = real(*args, **kwargs)
        params = {**reference.params, "learning_rate": reference.params["learning_rate"] / 4}
        return reference.model_copy(update={"params": params})

    monkeypatch.setattr(rules, "reference_config", changed)
    code, out, _ = verify(capsys, BUNDLE, "--pubkey", PUBLIC_KEY)
    assert code == EXIT_CHECK_FAILED, out
    assert "FAIL rules" in out and "learning_rate" in out
    assert "note: certification.json: check rules" in out and "case catalog" in out
    assert "claim:" not in out


def test_a_locked_key_edited_in_a_config_fails_the_rules(tmp_path, capsys):
    """Someone who ran with another learning rate and rewrote config and result to hide it."""
    from harness.models import ResolvedConfig

    folder = unpack(tmp_path)
    run = first_run(folder)
    config = json.loads((run / "config.json").read_text())
    config["params"]["learning_rate"] = config["params"]["learning_rate"] * 10
    (run / "config.json").write_text(json.dumps(config))
    result = json.loads((run / "result.json").read_text())
    result["config"] = config
    result["config_hash"] = ResolvedConfig.model_validate(config).config_hash
    (run / "result.json").write_text(json.dumps(result))
    code, out, _ = verify(capsys, repack(folder, tmp_path / "forged.tar.gz"))
    assert "FAIL rules" in out and "learning_rate" in out
    # The bundled results database still holds the run as it was: tampering, not just a rule.
    assert code == EXIT_TAMPERED and f"runs/harness.db: run {run.name} differs from its result.json in config" in out


def test_a_config_that_is_no_resolved_config_fails_naming_it(tmp_path, capsys):
    """config.json is validated where it is read: a malformed one is a failed check naming
    the file, not a crash of the evaluation."""
    folder = unpack(tmp_path)
    config_path = first_run(folder) / "config.json"
    config = json.loads(config_path.read_text())
    config["settings"]["max_steps"] = "many"
    config_path.write_text(json.dumps(config))
    code, out, _ = verify(capsys, repack(folder, tmp_path / "forged.tar.gz"))
    rel = config_path.relative_to(folder).as_posix()
    assert code == EXIT_TAMPERED and "FAIL integrity" in out and f"{rel}: unreadable (ValidationError)" in out
    assert "cannot re-evaluate" not in out and "pass rules" in out  # the other runs' configs


def test_bad_input_is_exit_2_one_line(tmp_path, capsys):
    not_bundle = tmp_path / "x.tar.gz"
    not_bundle.write_text("not a tarball")
    for args in ([not_bundle], [tmp_path / "missing.tar.gz"]):
        code, _, err = verify(capsys, *args)
        assert code == 2 and err.startswith("error: ") and err.count("\n") == 1
    bad_key = tmp_path / "bad.pub"
    bad_key.write_text("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n")
    code, _, err = verify(capsys, BUNDLE, "--pubkey", bad_key)
    assert code == 2 and "not a PEM public key" in err and err.count("\n") == 1


def test_a_valid_but_different_public_key_is_an_unknown_signer(tmp_path, capsys):
    from harness.certify.signing import generate_keypair

    generate_keypair(tmp_path / "other.key", tmp_path / "other.pub")
    code, out, _ = verify(capsys, BUNDLE, "--pubkey", tmp_path / "other.pub")
    assert code == EXIT_UNKNOWN_KEY and "signed by an unknown key" in out


def test_compare_two_bundles(tmp_path, capsys):
    code = main(["certify", "compare", str(BUNDLE), str(BUNDLE), "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and len(data["points"]) == 1
    point = data["points"][0]
    assert point["ratio"] == pytest.approx(1.0) and point["beyond_noise"] is False
    assert point["a"]["score"] > 0
    assert main(["certify", "compare", str(BUNDLE), str(BUNDLE)]) == 0
    assert "B/A | beyond noise" in capsys.readouterr().out


def _with_suite(folder, edit) -> None:
    """Edit the bundled suite and name the edited one in certification.json."""
    from harness.certify.suite import Suite, parse_suite_text

    path = folder / "suite.toml"
    text = edit(path.read_text())
    path.write_text(text)
    cert_path = folder / "certification.json"
    cert = json.loads(cert_path.read_text())
    cert["suite_sha256"] = Suite(spec=parse_suite_text(text, "t"), text=text, source="t").sha256
    cert_path.write_text(json.dumps(cert))


def test_fewer_repeats_than_the_suite_are_shown_whatever_the_claim_says(tmp_path, capsys):
    folder = unpack(tmp_path)
    _with_suite(folder, lambda text: text.replace("repeats = 3", "repeats = 4"))
    code, out, _ = verify(capsys, repack(folder, tmp_path / "forged.tar.gz"))
    # A reduced repeat count is allowed (--repeats) but always shown, recomputed from the suite.
    assert code == EXIT_UNKNOWN_KEY and "3 repeats per point instead of the suite's 4" in out


def test_the_repeats_deviation_reads_as_certify_run_records_it(tmp_path, capsys):
    from harness.certify.suite import parse_suite_text, repeats_deviation

    folder = unpack(tmp_path)
    _with_suite(folder, lambda text: text.replace('kind = "smoke"', 'kind = "full"')
                .replace("repeats = 3", "repeats = 5"))
    code, out, _ = verify(capsys, repack(folder, tmp_path / "forged.tar.gz"))
    suite = parse_suite_text((folder / "suite.toml").read_text(), "t").suite
    recorded = repeats_deviation(3, suite)
    assert recorded == "3 repeats per point instead of the suite's 5 (below the full minimum of 5)"
    assert code == EXIT_UNKNOWN_KEY and recorded in out


def test_a_moved_warm_up_window_in_a_result_fails(tmp_path, capsys):
    """skip_steps edited in result.json to change which steps FINAL_RESULT averages."""
    folder = unpack(tmp_path)
    result_path = first_run(folder) / "result.json"
    result = json.loads(result_path.read_text())
    result["config"]["settings"]["skip_steps"] = 1
    result_path.write_text(json.dumps(result))
    code, out, _ = verify(capsys, repack(folder, tmp_path / "forged.tar.gz"))
    rel = result_path.relative_to(folder).as_posix()
    assert code == EXIT_TAMPERED and f"{rel}: its config does not hash to its config_hash" in out


def test_the_verdict_lines_are_the_ones_certify_run_prints(registry):
    from harness.certify.record import verdict_lines
    from harness.certify.verify import verify_bundle

    outcome = verify_bundle(BUNDLE, registry)
    lines = verdict_lines(outcome.checks, outcome.summaries, recomputed=True)
    assert outcome.lines()[1:1 + len(lines)] == lines
    assert any("(olympic, recomputed, CV " in line for line in lines)


def test_a_rescored_bundle_re_signed_by_its_own_key_is_caught_by_its_results_database(tmp_path, capsys):
    """Logs, results and certification.json made consistent and re-signed; the database the
    bundle carries still holds the runs as they were."""
    from harness.certify import evaluate as evaluate_module

    folder = unpack(tmp_path)
    run = first_run(folder)
    result_path = run / "result.json"
    result = json.loads(result_path.read_text())
    result["status"] = "failed"  # a figure a log cannot contradict
    result_path.write_text(json.dumps(result))
    runs = sorted(p.name for p in (folder / "runs").iterdir() if p.is_dir())
    problems = evaluate_module.results_db_problems(folder, [*runs, "ghost-run"])
    assert problems == [f"runs/harness.db: run {run.name} differs from its result.json in status",
                        "runs/harness.db: run ghost-run is missing"]
    assert evaluate_module.results_db_problems(folder, runs[1:])[0] == (
        f"runs/harness.db: run {run.name} is not in the certification's plan")
    (folder / "runs" / "harness.db").unlink()
    code, out, _ = verify(capsys, repack(folder, tmp_path / "forged.tar.gz"), "--pubkey", PUBLIC_KEY)
    assert code == EXIT_TAMPERED and "runs/harness.db: missing" in out


def test_an_mfu_edited_and_re_signed_is_recomputed(tmp_path, capsys):
    folder = unpack(tmp_path)
    result_path = first_run(folder) / "result.json"
    result = json.loads(result_path.read_text())
    result["efficiency"]["mfu"] = 0.72
    result["efficiency"]["achieved_flops_per_device"] *= 3
    result_path.write_text(json.dumps(result))
    code, out, _ = verify(capsys, repack(folder, tmp_path / "forged.tar.gz"), "--pubkey", PUBLIC_KEY)
    assert code == EXIT_TAMPERED
    assert "MFU 0.72 claimed, recomputed None" in out and "achieved FLOP/s per device" in out


def test_a_suite_labelled_built_in_must_be_the_built_in_suite(tmp_path, capsys):
    """An own suite named smoke with a 0.99 CV bound, its source relabelled builtin:smoke."""
    folder = unpack(tmp_path)
    _with_suite(folder, lambda text: text.replace('name = "one"', 'name = "smoke"')
                .replace("cv_bound = 0.35", "cv_bound = 0.99"))
    cert_path = folder / "certification.json"
    cert = json.loads(cert_path.read_text())
    cert["suite_source"] = "builtin:smoke"
    cert_path.write_text(json.dumps(cert))
    code, out, _ = verify(capsys, repack(folder, tmp_path / "forged.tar.gz"), "--pubkey", PUBLIC_KEY)
    assert code == EXIT_TAMPERED  # certification.json still claims the suite check passed
    assert "FAIL suite: labelled builtin:smoke, but suite.toml is not harness" in out
