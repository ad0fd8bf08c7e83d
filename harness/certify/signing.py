"""Ed25519 keys and signatures over a bundle's manifest (``cryptography``)."""

from __future__ import annotations

import base64
import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

from harness.errors import UserInputError


def generate_keypair(private_path: Path, public_path: Path) -> str:
    """Write a new private key (PEM, PKCS#8, mode 0600) and its public key (PEM); return
    the public key's fingerprint. Existing files are never overwritten."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    for path in (private_path, public_path):
        if path.exists() or path.is_symlink():  # a dangling link too: it would be written through
            raise UserInputError(f"{path} exists; remove it or choose another name")
    key = Ed25519PrivateKey.generate()
    private_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption())
    public_pem = public_pem_of(key)
    written: list[Path] = []
    try:
        private_path.parent.mkdir(parents=True, exist_ok=True)
        for path, data, mode in ((private_path, private_pem, 0o600), (public_path, public_pem, 0o644)):
            # O_EXCL | O_NOFOLLOW: never through a link or over a file that appeared meanwhile
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
            written.append(path)
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
    except OSError as exc:
        for path in written:  # no half key pair
            path.unlink(missing_ok=True)
        where = exc.filename or private_path
        raise UserInputError(f"could not write the key {where}: {exc.strerror or exc}") from None
    return fingerprint(public_pem)


def public_pem_of(private_key) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return private_key.public_key().public_bytes(serialization.Encoding.PEM,
                                                 serialization.PublicFormat.SubjectPublicKeyInfo)


def fingerprint(public_pem: bytes) -> str:
    """sha256 of the raw public key, first 16 hex digits: how reports name a key."""
    return hashlib.sha256(_public_key(public_pem, "public key").public_bytes_raw()).hexdigest()[:16]


def load_private_key(path: Path):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    try:
        key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    except OSError as exc:
        raise UserInputError(f"cannot read key {path}: {exc.strerror}") from None
    except (ValueError, TypeError):
        raise UserInputError(f"{path} is not an unencrypted PEM private key "
                             "(make one with `harness certify keygen`)") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise UserInputError(f"{path} is not an Ed25519 key (make one with `harness certify keygen`)")
    return key


def _public_key(pem: bytes, origin: str):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        key = serialization.load_pem_public_key(pem)
    except (ValueError, TypeError):
        raise UserInputError(f"{origin} is not a PEM public key") from None
    if not isinstance(key, Ed25519PublicKey):
        raise UserInputError(f"{origin} is not an Ed25519 public key")
    return key


def load_public_key_file(path: Path) -> bytes:
    """The PEM bytes of a public key file, checked to be an Ed25519 key."""
    try:
        pem = path.read_bytes()
    except OSError as exc:
        raise UserInputError(f"cannot read public key {path}: {exc.strerror}") from None
    _public_key(pem, str(path))
    return pem


def sign(private_key, message: bytes) -> bytes:
    return base64.b64encode(private_key.sign(message)) + b"\n"


def signature_valid(public_pem: bytes, message: bytes, signature_b64: bytes) -> bool:
    from cryptography.exceptions import InvalidSignature

    key = _public_key(public_pem, "the bundle's public key")
    try:
        key.verify(base64.b64decode(signature_b64.strip(), validate=True), message)
    except (InvalidSignature, ValueError):
        return False
    return True


#: Where ``certify verify`` looks for trusted keys when no ``--trust`` file is given.
TRUST_FILE_ENV = "HARNESS_TRUST_FILE"
_PEM_BLOCK = re.compile(rb"-----BEGIN PUBLIC KEY-----.*?-----END PUBLIC KEY-----\s*", re.S)


@dataclass(frozen=True)
class TrustedKey:
    """A public key a verifier trusts, and the name it goes by (the comment above it in the
    trust file, else where it came from)."""

    name: str
    pem: bytes

    @property
    def raw(self) -> bytes:
        return _public_key(self.pem, self.name).public_bytes_raw()


def default_trust_file() -> Path:
    """``$HARNESS_TRUST_FILE``, else ``$XDG_CONFIG_HOME/harness/trusted-keys.pem`` (``~/.config``
    when XDG_CONFIG_HOME is unset)."""
    named = os.environ.get(TRUST_FILE_ENV)
    if named:
        return Path(named)
    config = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return config / "harness" / "trusted-keys.pem"


def load_trust_file(path: Path) -> list[TrustedKey]:
    """The keys of a trust file: PEM public keys one after another (``cat acme.pub >>
    trusted-keys.pem``); a ``# name`` line just above a key names it. A file without a single
    Ed25519 key is bad input."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UserInputError(f"cannot read trust file {path}: {exc.strerror}") from None
    keys = []
    for match in _PEM_BLOCK.finditer(data):
        before = data[: match.start()].rstrip().splitlines()
        comment = before[-1].decode("utf-8", "replace").strip() if before else ""
        pem = match.group(0).strip() + b"\n"
        _public_key(pem, f"a key in trust file {path}")
        name = comment.lstrip("#").strip() if comment.startswith("#") else f"{path.name} key {len(keys) + 1}"
        keys.append(TrustedKey(name=name, pem=pem))
    if not keys:
        raise UserInputError(f"trust file {path} holds no PEM public key (append one with "
                             "`cat signer.pub >> FILE`, a `# name` line above it)")
    return keys


def trusted_keys(pubkey: Path | None, trust_file: Path | None) -> list[TrustedKey]:
    """The keys a verification trusts: ``--pubkey`` and the trust file (``--trust``, else the
    default trust file where it exists)."""
    keys = [TrustedKey(name=f"--pubkey {pubkey}", pem=load_public_key_file(pubkey))] if pubkey else []
    if trust_file is None:
        default = default_trust_file()
        trust_file = default if default.is_file() else None
    if trust_file is not None:
        keys += load_trust_file(trust_file)
    return keys
