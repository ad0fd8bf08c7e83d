"""Bundle integrity: manifest, signature, tampering, and what is not a bundle."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

from harness.certify import bundle, signing
from harness.certify.bundle import check_integrity, extract_bundle, write_bundle
from harness.errors import UserInputError


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "certify-x"
    (folder / "runs" / "r1").mkdir(parents=True)
    (folder / "certification.json").write_text("{}")
    (folder / "runs" / "r1" / "train.log").write_text("iteration 1 | loss 7.0\n")
    (folder / "runs" / "r1" / "result.json").write_text('{"FINAL_RESULT": 100.0}')
    return folder


@pytest.fixture
def keys(tmp_path):
    private, public = tmp_path / "k.key", tmp_path / "k.pub"
    fingerprint = signing.generate_keypair(private, public)
    return signing.load_private_key(private), public, fingerprint


def _unpack(path: Path, tmp_path: Path) -> Path:
    out = tmp_path / f"unpacked-{len(list(tmp_path.iterdir()))}"
    out.mkdir()
    return extract_bundle(path, out)


def _trusting(public: Path, name: str = "acme") -> list[signing.TrustedKey]:
    return [signing.TrustedKey(name=name, pem=signing.load_public_key_file(public))]


def test_signed_bundle_verifies_with_the_pinned_key(tmp_path, keys):
    private, public, fingerprint = keys
    path = write_bundle(_folder(tmp_path), tmp_path / "b.tar.gz", private)
    report = check_integrity(_unpack(path, tmp_path), _trusting(public))
    assert report.ok and report.signed and report.trusted and report.key_fingerprint == fingerprint
    assert "signed by the trusted key acme" in report.describe()


def test_a_signature_counts_only_for_a_trusted_key(tmp_path, keys):
    """Valid under the key the bundle carries, but nobody said to trust that key."""
    private, _, fingerprint = keys
    path = write_bundle(_folder(tmp_path), tmp_path / "b.tar.gz", private)
    report = check_integrity(_unpack(path, tmp_path))
    assert report.ok and report.signed and not report.trusted
    assert report.describe().startswith("signed by an unknown key") and fingerprint in report.describe()


def test_unsigned_bundle_is_not_trusted(tmp_path):
    path = write_bundle(_folder(tmp_path), tmp_path / "b.tar.gz")
    report = check_integrity(_unpack(path, tmp_path))
    assert report.ok and not report.signed and not report.trusted
    assert report.describe().startswith("unsigned")


def test_a_trust_file_names_its_keys(tmp_path, keys, monkeypatch):
    private, public, _ = keys
    trust = tmp_path / "trusted-keys.pem"
    trust.write_text("# Acme Labs\n" + public.read_text())
    [key] = signing.load_trust_file(trust)
    assert key.name == "Acme Labs"
    monkeypatch.setenv(signing.TRUST_FILE_ENV, str(trust))
    assert [k.name for k in signing.trusted_keys(None, None)] == ["Acme Labs"]
    path = write_bundle(_folder(tmp_path), tmp_path / "b.tar.gz", private)
    assert check_integrity(_unpack(path, tmp_path), [key]).trusted_as == "Acme Labs"
    trust.write_text("no keys here\n")
    with pytest.raises(UserInputError, match="holds no PEM public key"):
        signing.load_trust_file(trust)


@pytest.mark.parametrize("target", ["runs/r1/train.log", "runs/r1/result.json", "certification.json"])
def test_a_flipped_byte_names_the_file(tmp_path, keys, target):
    private, public, _ = keys
    path = write_bundle(_folder(tmp_path), tmp_path / "b.tar.gz", private)
    folder = _unpack(path, tmp_path)
    data = bytearray((folder / target).read_bytes())
    data[len(data) // 2] ^= 0x01
    (folder / target).write_bytes(bytes(data))
    report = check_integrity(folder, _trusting(public))
    assert not report.ok and report.altered == [f"{target}: sha256 differs from the manifest"]


def test_a_rewritten_manifest_breaks_the_signature(tmp_path, keys):
    private, public, _ = keys
    path = write_bundle(_folder(tmp_path), tmp_path / "b.tar.gz", private)
    folder = _unpack(path, tmp_path)
    (folder / "runs" / "r1" / "result.json").write_text('{"FINAL_RESULT": 200.0}')
    (folder / bundle.MANIFEST).write_text(bundle.manifest_text(folder))
    report = check_integrity(folder, _trusting(public))
    assert not report.ok and report.altered[0].startswith("SIGNATURE: does not verify")


def test_a_bundle_signed_by_another_key_is_not_trusted_when_pinned(tmp_path, keys):
    _, public, _ = keys
    other_private = tmp_path / "o.key"
    signing.generate_keypair(other_private, tmp_path / "o.pub")
    path = write_bundle(_folder(tmp_path), tmp_path / "b.tar.gz", signing.load_private_key(other_private))
    folder = _unpack(path, tmp_path)
    report = check_integrity(folder, _trusting(public))
    assert report.ok and not report.trusted  # its own embedded key agrees with itself, not ours


def test_added_and_removed_files_are_named(tmp_path):
    path = write_bundle(_folder(tmp_path), tmp_path / "b.tar.gz")
    folder = _unpack(path, tmp_path)
    (folder / "runs" / "r1" / "extra.log").write_text("x")
    (folder / "runs" / "r1" / "train.log").unlink()
    assert check_integrity(folder).altered == ["runs/r1/extra.log: not in the manifest",
                                               "runs/r1/train.log: listed in the manifest but missing"]


def test_not_a_bundle(tmp_path):
    text = tmp_path / "plain.tar.gz"
    text.write_text("hello")
    with pytest.raises(UserInputError, match="not a certification bundle"):
        extract_bundle(text, tmp_path)
    with pytest.raises(UserInputError, match="does not exist"):
        extract_bundle(tmp_path / "missing.tar.gz", tmp_path)
    other = tmp_path / "other.tar.gz"
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "a.txt").write_text("a")
    with tarfile.open(other, "w:gz") as tar:
        tar.add(tmp_path / "x", arcname="x")
    with pytest.raises(UserInputError, match="no MANIFEST.sha256"):
        extract_bundle(other, tmp_path / "out")
    evil = tmp_path / "evil.tar.gz"
    with tarfile.open(evil, "w:gz") as tar:
        tar.add(tmp_path / "x" / "a.txt", arcname="../a.txt")
    with pytest.raises(UserInputError, match="unexpected entry"):
        extract_bundle(evil, tmp_path / "out2")


def test_key_errors_are_one_line(tmp_path):
    bad = tmp_path / "bad.pem"
    bad.write_text("not a key")
    with pytest.raises(UserInputError, match="not a PEM public key"):
        signing.load_public_key_file(bad)
    with pytest.raises(UserInputError, match="not an unencrypted PEM private key"):
        signing.load_private_key(bad)
    signing.generate_keypair(tmp_path / "k.key", tmp_path / "k.pub")
    with pytest.raises(UserInputError, match="exists"):
        signing.generate_keypair(tmp_path / "k.key", tmp_path / "k2.pub")
    assert (tmp_path / "k.key").stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize("target", ["absent", "file"])
def test_keygen_onto_an_existing_symlink_is_refused_and_writes_nothing(tmp_path, capsys, target):
    from harness.cli.main import main

    elsewhere = tmp_path / "elsewhere.pem"
    if target == "file":
        elsewhere.write_text("keep me")
    (tmp_path / "k.pub").symlink_to(elsewhere)
    assert main(["certify", "keygen", "--out", str(tmp_path / "k")]) == 2
    err = capsys.readouterr().err
    assert "k.pub exists; remove it or choose another name" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "k.key").exists()
    assert (elsewhere.read_text() == "keep me") if target == "file" else not elsewhere.exists()


def _archive(path: Path, files: dict[str, tuple[int, bytes]]) -> Path:
    """A .tar.gz with one top folder; each file is ``size`` bytes of ``pattern`` repeated."""
    import io

    class Repeating(io.RawIOBase):
        def __init__(self, size: int, pattern: bytes):
            self.left, self.pattern = size, pattern

        def readable(self) -> bool:
            return True

        def readinto(self, buffer) -> int:
            count = min(len(buffer), self.left)
            block = (self.pattern * (count // len(self.pattern) + 1))[:count]
            buffer[:count] = block
            self.left -= count
            return count

    with tarfile.open(path, "w:gz") as tar:
        for name, (size, pattern) in files.items():
            info = tarfile.TarInfo(f"cert-1/{name}")
            info.size = size
            tar.addfile(info, io.BufferedReader(Repeating(size, pattern)))
    return path


def test_a_decompression_bomb_is_refused_before_anything_is_unpacked(tmp_path, capsys, monkeypatch):
    import tempfile

    from harness.cli.main import main

    bomb = _archive(tmp_path / "bomb.tar.gz", {
        "certification.json": (2, b"{}"), "MANIFEST.sha256": (0, b"x"),
        "runs/r1/train.log": (300 * 1024**2, b"\0")})
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    assert main(["certify", "verify", str(bomb)]) == 2
    err = capsys.readouterr().err
    assert "unpack to 300.0 MiB (at most 200 times its size" in err and len(err.strip().splitlines()) == 1
    assert list(scratch.iterdir()) == []  # nothing was written, and the temporary folder is gone


def test_a_bundle_bigger_than_the_temporary_folder_says_it_is_full(tmp_path, capsys, monkeypatch):
    import random
    import tempfile

    from harness.cli.main import main
    from tests.conftest import small_tmpfs

    with small_tmpfs(tmp_path / "small_tmp") as small:
        noise = random.Random(7).randbytes(3 * 1024**2)  # incompressible: an honest 3 MiB bundle
        bundle = _archive(tmp_path / "big.tar.gz", {
            "certification.json": (2, b"{}"), "MANIFEST.sha256": (0, b"x"),
            "runs/r1/train.log": (3 * 1024**2, noise)})
        monkeypatch.setattr(tempfile, "tempdir", str(small))
        assert main(["certify", "verify", str(bundle)]) == 2
        err = capsys.readouterr().err
        assert "the temporary folder" in err and "is full" in err and "not a readable" not in err
        assert len(err.strip().splitlines()) == 1
