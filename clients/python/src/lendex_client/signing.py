"""The signed handshake's client side: the canonical message, and signers over
a Solana keypair (file or bytes)."""

import json
import os
from typing import Optional, Protocol

import nacl.exceptions
import nacl.signing

from .errors import RefusedError

MESSAGE_HEADER = "Service admin auth"
_ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def canonical_message(action: str, nonce: str) -> str:
    """The exact three lines a wallet signs for `action` with `nonce`."""
    return f"{MESSAGE_HEADER}\nAction: {action}\nNonce: {nonce}"


def b58encode(data: bytes) -> str:
    number = int.from_bytes(data, "big")
    out = ""
    while number:
        number, digit = divmod(number, 58)
        out = _ALPHABET[digit] + out
    return "1" * (len(data) - len(data.lstrip(b"\0"))) + out


def b58decode(text: str) -> bytes:
    number = 0
    for char in text:
        index = _ALPHABET.find(char)
        if index < 0:
            raise ValueError(f"not base58: {char!r}")
        number = number * 58 + index
    body = number.to_bytes((number.bit_length() + 7) // 8, "big") if number else b""
    return b"\0" * (len(text) - len(text.lstrip("1"))) + body


def add_admin_action(pubkey: str, role: str) -> str:
    return f"add_admin:{pubkey}:{role}"


def revoke_admin_action(pubkey: str) -> str:
    return f"revoke_admin:{pubkey}"


def init_pool_action(token_mint: str) -> str:
    return f"init_pool:{token_mint}"


READ_AUDIT_ACTION = "read_audit"
CREATE_WEBHOOK_ACTION = "create_webhook"
READ_WEBHOOKS_ACTION = "read_webhooks"


def delete_webhook_action(webhook_id: str) -> str:
    return f"delete_webhook:{webhook_id}"


def redeliver_webhook_action(webhook_id: str, delivery_id: str) -> str:
    return f"redeliver_webhook:{webhook_id}:{delivery_id}"


class Signer(Protocol):
    """Signs the canonical message: `public_key` is base58."""

    public_key: str

    def sign_message(self, message: bytes) -> bytes: ...


class KeypairSigner:
    """A signer over a 64-byte Solana keypair (seed, then public key)."""

    def __init__(self, secret: bytes):
        secret = bytes(secret)
        if len(secret) != 64:
            raise RefusedError("a keypair is 64 bytes")
        self._key = nacl.signing.SigningKey(secret[:32])
        if bytes(self._key.verify_key) != secret[32:]:
            raise RefusedError("the keypair's public half is not its secret's")
        self.public_key = b58encode(bytes(self._key.verify_key))

    @classmethod
    def generate(cls) -> "KeypairSigner":
        key = nacl.signing.SigningKey.generate()
        return cls(bytes(key) + bytes(key.verify_key))

    def sign_message(self, message: bytes) -> bytes:
        return self._key.sign(message).signature


def default_keypair_path() -> str:
    return os.path.join(os.path.expanduser("~"), ".config", "solana", "id.json")


def keypair_file(path: Optional[str] = None) -> KeypairSigner:
    """A signer over a Solana CLI keypair file (a JSON array of 64 bytes)."""
    path = os.path.expanduser(path or default_keypair_path())
    try:
        with open(path, encoding="utf-8") as f:
            values = json.load(f)
        return KeypairSigner(bytes(values))
    except (OSError, ValueError, TypeError) as e:
        raise RefusedError(f"{path} is not a keypair file ({e})") from e


def verifies(public_key: str, message: bytes, signature: bytes) -> bool:
    try:
        nacl.signing.VerifyKey(b58decode(public_key)).verify(message, signature)
        return True
    except (nacl.exceptions.BadSignatureError, ValueError, TypeError):
        return False
