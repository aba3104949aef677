"""Input checks shared by the statistics (one place for what "a number per question" means).

Nothing here returns NaN: empty input, NaN or infinite values, text and ``None`` raise
:class:`ragexam.errors.InputError` naming the function and the parameter.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ragexam.errors import InputError, integer_in, number_in

#: The seed used when the caller does not pass one.  It is an ordinary explicit seed: it is
#: recorded in every result and in its signature, so a default run reproduces too.
DEFAULT_SEED = 12345

#: Upper bound, in bytes, on the temporary arrays of one chunk of resamples or sign patterns.
#: Results do not depend on it (the random stream is drawn in the same order whatever the chunk).
_CHUNK_BYTES = 32 * 2**20

_ALTERNATIVES = ("two-sided", "greater", "less")


def _numeric(x: Any, *, func: str, param: str, ndims: tuple[int, ...] = (1,)) -> np.ndarray:
    """``x`` as a float64 array with ``ndim`` in ``ndims``, non-empty and finite, or InputError."""
    src = f"{func}()"
    expected = "a 1-D sequence of numbers, one per question" if ndims == (1,) else \
        "a 1-D sequence (one number per question) or a 2-D array (questions x metrics)"
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError) as exc:
        raise InputError(f"could not read it as numbers ({exc}); expected {expected}.",
                         source=src, field=param) from None
    if arr.dtype.kind == "O":
        if any(isinstance(v, (str, bytes)) for v in arr.flat):
            raise InputError(f"received text values; expected {expected}. Fix: convert the "
                             f"scores to numbers first.", source=src, field=param)
        missing = [i for i, v in enumerate(arr.flat) if v is None]
        if missing:
            at = np.unravel_index(missing[0], arr.shape)
            where = f"index {at[0]}" if arr.ndim == 1 else f"position {tuple(map(int, at))}"
            raise InputError(f"received None at {where} ({len(missing)} missing value(s) in "
                             f"all); expected {expected}. Fix: score every question (0 for a "
                             f"miss) or drop the question from every run before comparing.",
                             source=src, field=param)
        try:
            arr = arr.astype(np.float64)
        except (TypeError, ValueError):
            raise InputError(f"received values that are not numbers (None or missing values?); "
                             f"expected {expected}. Fix: score every question (0 for a miss) "
                             f"or drop the question from every run before comparing.",
                             source=src, field=param) from None
    if arr.dtype.kind not in "biuf":
        raise InputError(f"received values of dtype {arr.dtype}; expected {expected}.",
                         source=src, field=param)
    if arr.ndim not in ndims:
        fix = " Fix: pass one metric column at a time." if arr.ndim == 2 else ""
        raise InputError(f"received an array of shape {arr.shape}; expected {expected}.{fix}",
                         source=src, field=param)
    if arr.size == 0:
        raise InputError(f"received no values (shape {arr.shape}); expected {expected}. A "
                         f"statistic of zero questions is undefined.", source=src, field=param)
    arr = arr.astype(np.float64, copy=False)
    bad = ~np.isfinite(arr)
    if bad.any():
        pos = tuple(int(i) for i in np.argwhere(bad)[0])
        what = "NaN" if np.isnan(arr[pos]) else str(arr[pos])
        at = f"index {pos[0]}" if len(pos) == 1 else f"row {pos[0]}, column {pos[1]}"
        raise InputError(f"received {what} at {at} ({int(bad.sum())} non-finite value(s) in "
                         f"all); expected finite numbers. Fix: score every question (0 for a "
                         f"miss) or drop the question from every run before comparing.",
                         source=src, field=param)
    return arr


def _paired(a: Any, b: Any, *, func: str, ndims: tuple[int, ...] = (1,),
            names: tuple[str, str] = ("a", "b")) -> tuple[np.ndarray, np.ndarray]:
    a = _numeric(a, func=func, param=names[0], ndims=ndims)
    b = _numeric(b, func=func, param=names[1], ndims=ndims)
    if a.shape != b.shape:
        if len(a) != len(b):
            got = f"{names[0]} has {len(a)} values but {names[1]} has {len(b)}"
        else:
            got = f"{names[0]} has shape {a.shape} but {names[1]} has shape {b.shape}"
        raise InputError(f"{got}; expected one value per question in both, in the same question "
                         f"order. Fix: align both on the same question ids first.",
                         source=f"{func}()", field=f"{names[0]}, {names[1]}")
    return a, b


def _check_int(value: Any, *, func: str, param: str, minimum: int) -> int:
    return integer_in(value, minimum, source=f"{func}()", field=param)


def _check_seed(seed: Any, *, func: str) -> int:
    if seed is None:
        raise InputError("received None, which would make the result irreproducible; expected "
                         f"a non-negative integer (the default is {DEFAULT_SEED}).",
                         source=f"{func}()", field="seed")
    return _check_int(seed, func=func, param="seed", minimum=0)


def _check_fraction(value: Any, *, func: str, param: str, hint: str = "") -> float:
    return number_in(value, 0.0, 1.0, above=True, below=True, source=f"{func}()", field=param, fix=hint.strip())


def _check_alternative(alternative: Any, *, func: str) -> str:
    if alternative not in _ALTERNATIVES:
        raise InputError(f"received {alternative!r}; expected one of "
                         f"{', '.join(repr(a) for a in _ALTERNATIVES)}.",
                         source=f"{func}()", field="alternative")
    return str(alternative)


def _chunk_rows(n_total: int, bytes_per_row: int) -> int:
    return max(1, min(n_total, _CHUNK_BYTES // max(1, bytes_per_row)))


def _finite(x: Any, *, func: str, param: str) -> float:
    return number_in(x, source=f"{func}()", field=param)
