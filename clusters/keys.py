"""SSH keys the portal generates for students' own cluster accounts, so nobody pastes a private key into a form.

Invariant: the private key is made here, stored only encrypted (ClusterAccount.set_secret) and never shown; the
public key is not a secret and is shown for the student to put in ~/.ssh/authorized_keys on the cluster.
"""

from __future__ import annotations

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey


def generate_ed25519(comment: str) -> tuple[str, str]:
    """(private key in OpenSSH format without a passphrase, "ssh-ed25519 AAAA… comment" public line)."""
    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption()
    ).decode()
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return private, f"{public.decode()} {comment}"
