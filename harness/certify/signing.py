"""Ed25519 keys and signatures over a bundle's manifest (``cryptography``)."""

from __future__ import annotations

import base64
import hashlib
import os
from pathlib import Path

from harness.errors import UserInputError


def generate_keypair(private_path: Path, public_path: Path) -> str:
    """Write a new private key (PEM, PKCS#8, mode 0600) and its public key (PEM); return
    the public key's fingerprint. Existing files are never overwritten."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    for path in (private_path, public_path):
        if path.exists():
            raise UserInputError(f"{path} exists; remove it or choose another name")
    key = Ed25519PrivateKey.generate()
    private_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption())
    public_pem = public_pem_of(key)
    private_path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(private_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(private_pem)
    public_path.write_bytes(public_pem)
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
