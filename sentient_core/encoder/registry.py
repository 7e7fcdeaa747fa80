"""Encoders by name: :func:`get_encoder` and :data:`ENCODER_NAMES`."""

from __future__ import annotations

from sentient_core.encoder.char_encoder import CharPrimeEncoder
from sentient_core.encoder.token_encoder import TokenPrimeEncoder
from sentient_core.encoder.types import TextEncoder
from sentient_core.errors import ArgumentError

__all__ = ["ENCODER_NAMES", "get_encoder"]

_ENCODERS: dict[str, type] = {
    TokenPrimeEncoder.name: TokenPrimeEncoder,
    CharPrimeEncoder.name: CharPrimeEncoder,
}
#: Names accepted by :func:`get_encoder`; the first is the default.
ENCODER_NAMES: tuple[str, ...] = tuple(_ENCODERS)


def get_encoder(name: str = "token", **kw: object) -> TextEncoder:
    """Build an encoder by name.

    Parameters
    ----------
    name : str
        ``"token"`` (default) or ``"char-compat"`` (reference compatibility only).
    **kw
        Passed to the encoder's constructor (``bank_primes``, ``code_dim``, ...).

    Raises
    ------
    ValueError
        For an unknown name (the message lists the known ones) or a bad option.
    """
    try:
        cls = _ENCODERS[name]
    except (KeyError, TypeError):
        raise ArgumentError(
            f"unknown encoder {name!r}; known encoders: {', '.join(ENCODER_NAMES)}"
        ) from None
    return cls(**kw)
