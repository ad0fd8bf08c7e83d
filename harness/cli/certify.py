"""``harness certify``: run a certification suite, verify and compare bundles, keys, suites."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated, Optional

import typer

from harness.cli.state import app_state
from harness.certify.scoring import OLYMPIC_MIN
from harness.cli.options import EnvChoice, EnvOption

EXIT_FAILED = 1


def _progress_observer():
    from harness.certify.runner import CertifyObserver

    class StderrObserver(CertifyObserver):
        """One line per repeat on stderr: stdout is kept for the verdict and the bundle path."""

        def __init__(self) -> None:
            self.started = time.monotonic()

        def point(self, label, repeat, repeats, index, total) -> None:
            elapsed = time.monotonic() - self.started
            typer.echo(f"[certify {index}/{total} {elapsed:5.0f}s] {label} repeat {repeat}/{repeats}", err=True)

        def stage(self, name, detail="") -> None:
            pass

    return StderrObserver()


certify = typer.Typer(
    help="Vendor hardware certification: run a suite under enforced rules, write a signed "
         "bundle, verify or compare bundles.",
    no_args_is_help=True, add_completion=False, rich_markup_mode=None,
)


@certify.command("suites")
def suites_command(ctx: typer.Context) -> None:
    """List the certification suites (built-in and from plugins) with what each runs."""
    from harness.certify.suite import parse_suite_text, suite_sources

    for name, (path, source) in suite_sources(app_state(ctx).harness()).items():
        spec = parse_suite_text(path.read_text(encoding="utf-8"), str(path))
        s = spec.suite
        layouts = "; ".join(
            f"{p.case} nproc {','.join(str(n) for n in p.nproc)}"
            + (f" {p.precision}" if p.precision else "")
            + (" " + " ".join(f"{k}={v}" for k, v in p.set.items()) if p.set else "")
            for p in spec.point)
        steps = f"{s.max_steps} steps" if s.max_steps else "case steps"
        typer.echo(f"{name} ({source}, {s.kind}, {s.scale} scale, {s.repeats} repeats, {steps}, "
                   f"CV <= {s.cv_bound:.0%}): {s.description}")
        typer.echo(f"    {layouts}")


@certify.command("run")
def run_command(
    ctx: typer.Context,
    vendor: Annotated[str, typer.Option(help="Vendor plugin: cpu, nvidia, ...")],
    suite: Annotated[str, typer.Option(help="Suite name (see `harness certify suites`) or a suite TOML file.")] = "smoke",
    output: Annotated[Path, typer.Option(help="Folder for the certification folder and bundle.")] = Path("certifications"),
    key: Annotated[Optional[Path], typer.Option(help="Ed25519 private key (PEM) to sign the bundle; unsigned without.")] = None,
    repeats: Annotated[Optional[int], typer.Option(min=OLYMPIC_MIN, help="Repeats per point instead of the suite's (fewer is recorded as a deviation).")] = None,
    framework: Annotated[Optional[str], typer.Option(help="Framework for every point (recorded as a deviation).")] = None,
    set_: Annotated[Optional[list[str]], typer.Option(
        "--set", help="Vendor tuning key=value (repeatable); only keys every case of the suite lets vendors tune, never the measurement window.")] = None,
    env: EnvOption = EnvChoice.auto,
) -> int:
    """Run every point of a suite N times, check every rule, write the report and one
    .tar.gz bundle; the bundle path is the last line of stdout. Exit 0 when every check
    passed, 1 otherwise."""
    from harness.certify.record import verdict_lines
    from harness.certify.runner import CertifyRequest, run_certification
    from harness.certify.signing import load_private_key
    from harness.certify.suite import load_suite
    harness = app_state(ctx).harness()
    private_key = load_private_key(key) if key is not None else None
    loaded = load_suite(suite, harness)
    outcome = run_certification(harness, CertifyRequest(
        suite=loaded, vendor=vendor, output=output, repeats=repeats, set_pairs=list(set_ or []),
        framework=framework, private_key=private_key, env_mode=env.value,
    ), _progress_observer())
    cert = outcome.certification
    for line in verdict_lines(cert.checks, cert.summaries):
        typer.echo(line)
    typer.echo(f"certification {'PASSED' if cert.passed else 'FAILED'}: report {outcome.folder / 'report.html'}"
               + ("" if key else " (bundle unsigned: verify exits 4 on it)"))
    typer.echo(str(outcome.bundle_path))
    if cert.stopped:
        typer.echo(f"certification stopped: {cert.stopped}", err=True)
        raise typer.Exit(outcome.stop_exit_code)
    if not cert.passed:
        raise typer.Exit(EXIT_FAILED)
    return 0


@certify.command("verify")
def verify_command(
    ctx: typer.Context,
    bundle: Annotated[Path, typer.Argument(help="A certification bundle (.tar.gz).")],
    pubkey: Annotated[Optional[Path], typer.Option(help="A signer's public key (PEM) to trust.")] = None,
    trust: Annotated[Optional[Path], typer.Option(help="Trust file: PEM public keys, each under a `# name` line (default: $HARNESS_TRUST_FILE, else ~/.config/harness/trusted-keys.pem where it exists).")] = None,
) -> int:
    """Recompute a bundle's verdict: manifest and signature, every log re-parsed, every
    derived figure recomputed, locked keys, repeats, noise and convergence. A signature
    counts only for a key given with --pubkey or listed in the trust file. Exit 0 verified
    (intact, every check holds, a trusted signer), 1 a check fails, 2 bad input, 3
    tampered, 4 unsigned, 5 signed by an unknown key."""
    from harness.certify.verify import verify_bundle

    outcome = verify_bundle(bundle, app_state(ctx).registry(), pubkey, trust)
    for line in outcome.lines():
        typer.echo(line)
    typer.echo(f"{outcome.verdict()}: {bundle}")
    if outcome.exit_code:
        raise typer.Exit(outcome.exit_code)
    return 0


@certify.command("keygen")
def keygen_command(
    out: Annotated[Path, typer.Option(help="Key file prefix: writes PREFIX.key (private, mode 600) and PREFIX.pub.")] = Path("harness-certify"),
) -> None:
    """Make an Ed25519 key pair for signing bundles."""
    from harness.certify.signing import generate_keypair

    private, public = out.with_name(out.name + ".key"), out.with_name(out.name + ".pub")
    fp = generate_keypair(private, public)
    typer.echo(f"private key {private}\npublic key {public} (fingerprint {fp})")


@certify.command("compare")
def compare_command(
    ctx: typer.Context,
    bundle_a: Annotated[Path, typer.Argument(help="Baseline bundle (A).")],
    bundle_b: Annotated[Path, typer.Argument(help="Candidate bundle (B).")],
    json_output: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Two bundles side by side per point: score, MFU, memory, energy, ratio B/A and
    whether the difference is beyond both sides' noise."""
    from harness.certify.compare import compare_bundles, load_side
    from harness.report.build import fmt_mib, fmt_value

    registry = app_state(ctx).registry()
    a, b = load_side(bundle_a, registry), load_side(bundle_b, registry)
    rows = compare_bundles(a, b)
    if json_output:
        typer.echo(json.dumps({"a": str(bundle_a), "b": str(bundle_b), "points": [
            {"label": r.label, "a": r.a.model_dump() if r.a else None,
             "b": r.b.model_dump() if r.b else None, "ratio": r.ratio,
             "beyond_noise": r.beyond_noise} for r in rows]}, indent=2))
        return
    typer.echo(f"A: {bundle_a} ({a.certification.vendor}, {a.integrity})")
    typer.echo(f"B: {bundle_b} ({b.certification.vendor}, {b.integrity})")
    typer.echo("point | score A | score B | unit | B/A | beyond noise | MFU A/B | memory MiB A/B | energy J A/B")
    for r in rows:
        def get(side, attr):
            return getattr(side, attr) if side is not None else None

        mfu = "/".join(f"{v:.1%}" if v is not None else "-" for v in (get(r.a, "mfu"), get(r.b, "mfu")))
        mem = "/".join(fmt_mib(v) for v in (get(r.a, "peak_memory_bytes"), get(r.b, "peak_memory_bytes")))
        energy = "/".join(f"{v:.3g}" if v is not None else "-"
                          for v in (get(r.a, "energy_per_unit_j"), get(r.b, "energy_per_unit_j")))
        ratio = f"{r.ratio:.3f}" if r.ratio is not None else "-"
        beyond = {True: "yes", False: "no", None: "-"}[r.beyond_noise]
        unit = get(r.a, "unit") or get(r.b, "unit") or "-"
        typer.echo(f"{r.label} | {fmt_value(get(r.a, 'score'))} | {fmt_value(get(r.b, 'score'))} | "
                   f"{unit} | {ratio} | {beyond} | {mfu} | {mem} | {energy}")


@certify.command("reference")
def reference_command(
    ctx: typer.Context,
    vendor: Annotated[str, typer.Option(help="Vendor plugin the reference runs use.")],
    suite: Annotated[str, typer.Option(help="Suite whose points get reference bands.")] = "smoke",
    seeds: Annotated[str, typer.Option(help="Comma-separated seeds, one reference run each (at least 2), besides the suite's own seed; the band is centred on the runs' mean and its width grows with their spread, so more seeds give a steadier band.")] = "1,2,3,4",
    point: Annotated[Optional[list[str]], typer.Option(help="Only this point label (repeatable).")] = None,
    workdir: Annotated[Path, typer.Option(help="Folder for the reference runs.")] = Path("certifications/references"),
    into: Annotated[Optional[Path], typer.Option(help="Where to write the bands (default: harness/certify/references).")] = None,
    env: EnvOption = EnvChoice.auto,
) -> None:
    """Record convergence reference bands for a suite's points from runs with several
    seeds (maintainers; the bands are committed to the repository)."""
    from harness.certify import convergence
    from harness.certify.reference import record_references
    from harness.certify.suite import load_suite
    from harness.errors import UserInputError

    try:
        seed_list = sorted({int(s) for s in seeds.split(",") if s.strip()})
    except ValueError:
        raise UserInputError(f"--seeds {seeds!r}: expected comma-separated integers") from None
    if len(seed_list) < 2:
        raise UserInputError("--seeds: a band needs at least two seeds")
    harness = app_state(ctx).harness()
    loaded = load_suite(suite, harness)
    written = record_references(harness, loaded, vendor, seed_list, workdir, point,
                                into or convergence.REFERENCE_DIR, _progress_observer(), env.value)
    for path in written:
        typer.echo(str(path))


def register(app: typer.Typer) -> None:
    app.add_typer(certify, name="certify")
