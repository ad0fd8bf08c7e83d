"""The certification bundle: one ``.tar.gz`` holding a certification folder, its sha256
manifest and an Ed25519 signature over the manifest.

Layout inside the archive (one top folder, the certification id)::

    certification.json  suite.toml  system.json  report.md  report.html  charts/*.svg
    runs/<run-id>/...   (train logs, config.json, result.json, index/, monitor.csv, ...)
    MANIFEST.sha256     "<sha256>  <path>" for every other file, sorted by path
    SIGNATURE           base64 Ed25519 signature of MANIFEST.sha256 (signed bundles)
    PUBLIC_KEY          the signer's public key, PEM (signed bundles)
"""

from __future__ import annotations

import errno
import shutil
import tarfile
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.certify import signing
from harness.errors import UserInputError
from harness.provenance import sha256_file

MANIFEST, SIGNATURE, PUBLIC_KEY = "MANIFEST.sha256", "SIGNATURE", "PUBLIC_KEY"
#: A bundle unpacks to at most this many times its own size: logs, JSON and SVG compress
#: some tens of times; a bundle far beyond that is a decompression bomb.
MAX_EXPANSION = 200
#: ... and to at most this much whatever its size.
MAX_UNPACKED_BYTES = 16 * 1024**3
_UNLISTED = {MANIFEST, SIGNATURE, PUBLIC_KEY}


def _files(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")
                  if p.is_file() and p.relative_to(folder).as_posix() not in _UNLISTED)


def manifest_text(folder: Path) -> str:
    return "".join(f"{sha256_file(folder / rel)}  {rel}\n" for rel in _files(folder))


def write_bundle(folder: Path, out_path: Path, private_key=None) -> Path:
    """Write MANIFEST (and SIGNATURE, PUBLIC_KEY when a key is given) into ``folder`` and
    pack it as ``out_path`` (written to a temporary name, then renamed)."""
    manifest = manifest_text(folder).encode()
    (folder / MANIFEST).write_bytes(manifest)
    for name in (SIGNATURE, PUBLIC_KEY):
        (folder / name).unlink(missing_ok=True)
    if private_key is not None:
        (folder / SIGNATURE).write_bytes(signing.sign(private_key, manifest))
        (folder / PUBLIC_KEY).write_bytes(signing.public_pem_of(private_key))
    out_path.parent.mkdir(parents=True, exist_ok=True)
    partial = out_path.with_name(out_path.name + ".partial")
    with tarfile.open(partial, "w:gz") as tar:
        tar.add(folder, arcname=folder.name)
    partial.replace(out_path)
    return out_path


def extract_bundle(bundle: Path, into: Path) -> Path:
    """Unpack safely (regular files and folders only, no absolute or ``..`` paths, one top
    folder) and return the certification folder. Anything else is not a bundle: exit 2."""
    if not bundle.is_file():
        raise UserInputError(f"{bundle} does not exist or is not a file")
    try:
        with tarfile.open(bundle, "r:gz") as tar:
            members = tar.getmembers()
            tops = set()
            for member in members:
                parts = Path(member.name).parts
                if (member.name.startswith("/") or ".." in parts or not parts
                        or not (member.isfile() or member.isdir())):
                    raise UserInputError(f"{bundle} is not a certification bundle "
                                         f"(unexpected entry {member.name!r})")
                tops.add(parts[0])
            if len(tops) != 1:
                raise UserInputError(f"{bundle} is not a certification bundle (expected one top folder)")
            _check_unpacked_size(bundle, sum(m.size for m in members if m.isfile()), into)
            try:
                tar.extractall(into, filter="data")
            except OSError as exc:
                if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                    raise UserInputError(f"the temporary folder {into} is full: {bundle} did not "
                                         "fit while unpacking; set TMPDIR to a folder with room") from None
                raise
    except (tarfile.TarError, EOFError, OSError, UnicodeDecodeError) as exc:
        raise UserInputError(f"{bundle} is not a certification bundle (not a readable .tar.gz: "
                             f"{exc.__class__.__name__})") from None
    folder = into / tops.pop()
    if not (folder / MANIFEST).is_file() or not (folder / "certification.json").is_file():
        raise UserInputError(f"{bundle} is not a certification bundle (no {MANIFEST} or certification.json)")
    return folder


def _check_unpacked_size(bundle: Path, unpacked: int, into: Path) -> None:
    """Refuse, before anything is written, a bundle that would unpack to far more than its
    own size (a decompression bomb) or than the temporary folder holds. The sizes come from
    the archive's headers, read without writing anything."""
    packed = bundle.stat().st_size
    if unpacked > MAX_UNPACKED_BYTES or unpacked > MAX_EXPANSION * max(packed, 1):
        raise UserInputError(
            f"{bundle} is not a certification bundle: its {packed / 1024**2:,.1f} MiB unpack to "
            f"{unpacked / 1024**2:,.1f} MiB (at most {MAX_EXPANSION} times its size and "
            f"{MAX_UNPACKED_BYTES // 1024**3} GiB are accepted)")
    existing = next(p for p in (into, *into.parents) if p.exists())  # into may be made later
    free = shutil.disk_usage(existing).free
    if unpacked > free:
        raise UserInputError(
            f"the temporary folder {into} is full for {bundle}: it unpacks to "
            f"{unpacked / 1024**2:,.1f} MiB and {free / 1024**2:,.1f} MiB are free; set TMPDIR "
            "to a folder with room")


@dataclass
class IntegrityReport:
    """The manifest and signature of an unpacked bundle, and whom the signature names."""

    altered: list[str] = field(default_factory=list)  # "path: why"
    signed: bool = False
    signature_ok: bool | None = None
    key_fingerprint: str | None = None
    trusted_as: str | None = None  # the trusted key's name when a trusted key signed it

    @property
    def ok(self) -> bool:
        """Nothing altered: every file as listed, and a signature (if any) that verifies."""
        return not self.altered and self.signature_ok is not False

    @property
    def trusted(self) -> bool:
        return self.ok and self.trusted_as is not None

    def describe(self) -> str:
        if self.altered:
            return "altered: " + "; ".join(self.altered[:5]) + (
                f" (+{len(self.altered) - 5} more)" if len(self.altered) > 5 else "")
        if not self.signed:
            return "unsigned: manifest intact, but no signature vouches for the contents"
        if self.trusted_as is None:
            return (f"signed by an unknown key: manifest intact, signature valid for the key inside "
                    f"the bundle, fingerprint {self.key_fingerprint}, which is neither --pubkey nor "
                    "in the trust file")
        return (f"manifest intact, signature valid, signed by the trusted key {self.trusted_as} "
                f"(fingerprint {self.key_fingerprint})")


def check_integrity(folder: Path, trusted: Sequence[signing.TrustedKey] = ()) -> IntegrityReport:
    """Recompute every file's sha256 against the manifest, and the signature: it must verify
    under the key inside the bundle or a trusted one, and counts only when a trusted key
    (``--pubkey``, the trust file) made it."""
    report = IntegrityReport()
    listed: dict[str, str] = {}
    for line in (folder / MANIFEST).read_text(encoding="utf-8", errors="replace").splitlines():
        digest, sep, rel = line.partition("  ")
        if not sep:
            report.altered.append(f"{MANIFEST}: malformed line {line[:60]!r}")
            continue
        listed[rel] = digest
    present = set(_files(folder))
    for rel in sorted(present - set(listed)):
        report.altered.append(f"{rel}: not in the manifest")
    for rel, digest in sorted(listed.items()):
        if rel not in present:
            report.altered.append(f"{rel}: listed in the manifest but missing")
        elif sha256_file(folder / rel) != digest:
            report.altered.append(f"{rel}: sha256 differs from the manifest")
    signature = folder / SIGNATURE
    if not signature.is_file():
        return report
    report.signed = True
    manifest, signature_b64 = (folder / MANIFEST).read_bytes(), signature.read_bytes()
    for key in trusted:
        if signing.signature_valid(key.pem, manifest, signature_b64):
            report.signature_ok, report.trusted_as = True, key.name
            report.key_fingerprint = signing.fingerprint(key.pem)
            return report
    embedded = folder / PUBLIC_KEY
    if not embedded.is_file():
        report.altered.append(f"{SIGNATURE}: verifies under no trusted key, and no {PUBLIC_KEY} "
                              "is beside it")
        report.signature_ok = False
        return report
    try:
        report.key_fingerprint = signing.fingerprint(embedded.read_bytes())
    except UserInputError:
        report.altered.append(f"{PUBLIC_KEY}: not an Ed25519 public key")
        report.signature_ok = False
        return report
    report.signature_ok = signing.signature_valid(embedded.read_bytes(), manifest, signature_b64)
    if not report.signature_ok:
        report.altered.append(f"{SIGNATURE}: does not verify over {MANIFEST} with key "
                              f"{report.key_fingerprint}")
    return report


def temporary_folder() -> tempfile.TemporaryDirectory:
    return tempfile.TemporaryDirectory(prefix="harness-certify-")
