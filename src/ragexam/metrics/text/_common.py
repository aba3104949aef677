"""Small helpers shared by the text metrics: signatures and parameter checks."""

from __future__ import annotations


from ragexam.errors import InputError, integer_in, number_in
from ragexam.signature import Signature

__all__ = ["signature", "check_bool", "check_int", "check_positive"]


def signature(pairs: list[tuple[str, object]]) -> Signature:
    """``key:value|...|version:ragexam-<version>``; the ragexam version always comes last."""
    return Signature(pairs)


def check_bool(value, name: str, func: str) -> bool:
    if not isinstance(value, bool):
        raise InputError(f"{func}: `{name}` must be True or False, got {value!r}.", field=name)
    return value


def check_int(value, name: str, func: str, minimum: int) -> int:
    return integer_in(value, minimum, source=f"{func}()", field=name)


def check_positive(value, name: str, func: str) -> float:
    return number_in(value, 0.0, above=True, source=f"{func}()", field=name)
