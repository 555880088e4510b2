"""Generators for the document's custom formats (docs/api.md, "Formats").

The document bounds a public key and a wallet signature with a pattern
(characters and length) and names a format, solana-pubkey or
solana-signature, for what no pattern of useful size can say: the text
decodes to exactly 32 or 64 bytes. Here the fuzzer learns to write them: base58
of random bytes, leading zero bytes included, as a client's encoder would.
Loaded by scripts/api-fuzz through SCHEMATHESIS_HOOKS.
"""

from hypothesis import strategies as st

import schemathesis

ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def base58(data: bytes) -> str:
    number = int.from_bytes(data, "big")
    digits = ""
    while number:
        number, digit = divmod(number, 58)
        digits = ALPHABET[digit] + digits
    zeros = len(data) - len(data.lstrip(b"\0"))
    return "1" * zeros + digits


def encoded(size: int) -> st.SearchStrategy[str]:
    # Mostly uniform bytes (the usual 43 or 44 characters), sometimes leading
    # zeros (the short encodings, down to all ones).
    leading = st.integers(min_value=0, max_value=size).flatmap(
        lambda zeros: st.binary(min_size=size - zeros, max_size=size - zeros).map(
            lambda rest: bytes(zeros) + rest
        )
    )
    return st.one_of(st.binary(min_size=size, max_size=size), leading).map(base58)


schemathesis.openapi.format("solana-pubkey", encoded(32))
schemathesis.openapi.format("solana-signature", encoded(64))
