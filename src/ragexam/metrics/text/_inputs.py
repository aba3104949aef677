"""Validation of the ``(hypotheses, references)`` arguments shared by every text metric.

ragexam's reference layout is **per segment**: ``references[i]`` holds the reference(s) of
``hypotheses[i]``, either one string or a non-empty sequence of strings.  This is the
transpose of sacrebleu's layout (``refs[k][i]``, one *stream* per reference set); it lets
questions carry different numbers of acceptable answers.
"""

from __future__ import annotations

from collections.abc import Sequence

from ragexam import fmt
from ragexam.errors import InputError

__all__ = ["check_corpus", "check_sentence", "check_choice", "nrefs_label"]


def _type_name(obj) -> str:
    return type(obj).__name__


def _check_refs_item(item, where: str, func: str) -> list[str]:
    if isinstance(item, str):
        return [item]
    if type(item) in (list, tuple) and item and all(type(ref) is str for ref in item):
        return list(item)  # fast path for the common case
    if not isinstance(item, Sequence) or isinstance(item, (bytes, bytearray)):
        raise InputError(
            f"{func}: expected a reference string or a non-empty sequence of reference strings, "
            f"got {_type_name(item)}.", field=where)
    if len(item) == 0:
        raise InputError(
            f"{func}: this segment has no reference; every hypothesis needs at least one "
            "reference string.", field=where)
    for k, ref in enumerate(item):
        if not isinstance(ref, str):
            raise InputError(
                f"{func}: expected a reference string, got {_type_name(ref)} ({ref!r:.60}).",
                field=f"{where}[{k}]")
    return list(item)


def _sequence(value: object, name: str, func: str, single: str, expected: str) -> None:
    """``value`` is a sequence and not a bare ``str`` (else an :class:`InputError` saying ``single`` or
    ``expected``)."""
    if isinstance(value, str):
        raise InputError(f"{func}: `{name}` is a single str; {single}.", field=name)
    if not isinstance(value, Sequence):
        raise InputError(f"{func}: `{name}` must be {expected}, got {_type_name(value)}.", field=name)


def check_corpus(hypotheses, references, func: str) -> tuple[list[str], list[list[str]]]:
    """Validate a corpus; return ``(hypotheses, references)`` as lists (refs as lists of str).

    :raises InputError: ``hypotheses`` is a bare ``str`` or not a sequence of ``str``;
        ``references`` is not a sequence of (``str`` or non-empty sequence of ``str``);
        the two lengths differ; the corpus is empty.
    """
    _sequence(hypotheses, "hypotheses", func, "a corpus is a sequence of strings, one per segment. Wrap it in a "
              "list, or use the sentence_* function", "a sequence (list/tuple) of str")
    _sequence(references, "references", func, "pass one reference (or a list of references) per hypothesis",
              "a sequence with one entry per hypothesis")
    if len(hypotheses) != len(references):
        raise InputError(
            f"{func}: got {fmt.plural(len(hypotheses), 'hypothesis', 'hypotheses')} but "
            f"{fmt.plural(len(references), 'reference entry')}; "
            "they must pair up one to one (references[i] holds the reference(s) of "
            "hypotheses[i]; note this is the transpose of sacrebleu's refs[k][i] layout).",
            field="references")
    if len(hypotheses) == 0:
        raise InputError(f"{func}: the corpus is empty; a score needs at least one segment.",
                         field="hypotheses")
    hyps = list(hypotheses)
    for i, h in enumerate(hyps):
        if not isinstance(h, str):
            raise InputError(f"{func}: expected a hypothesis string, got {_type_name(h)} ({h!r:.60}).",
                             field=f"hypotheses[{i}]")
    refs = [_check_refs_item(r, f"references[{i}]", func) for i, r in enumerate(references)]
    return hyps, refs


def check_sentence(hypothesis, references, func: str) -> tuple[list[str], list[list[str]]]:
    """Validate one segment (``hypothesis`` str, ``references`` str or sequence of str)."""
    if not isinstance(hypothesis, str):
        raise InputError(f"{func}: `hypothesis` must be a str, got {_type_name(hypothesis)}.",
                         field="hypothesis")
    return [hypothesis], [_check_refs_item(references, "references", func)]


def check_choice(value, choices, name: str, func: str) -> str:
    """Raise :class:`InputError` unless ``value`` is one of ``choices``."""
    if not isinstance(value, str) or value not in choices:
        raise InputError(
            f"{func}: unknown {name} {value!r}; valid choices: {', '.join(map(repr, choices))}.",
            field=name)
    return value


def nrefs_label(refs: list[list[str]]) -> str:
    """The signature's ``nrefs`` value: the common count, or ``var`` when counts differ."""
    counts = {len(r) for r in refs}
    return str(counts.pop()) if len(counts) == 1 else "var"
