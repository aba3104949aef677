"""A reversible encoding of ids for TREC files, whose fields are separated by whitespace.

ragexam accepts any non-empty id in JSONL, CSV and BEIR inputs -- real data sets have ids with spaces
(MTEB's AutoRAGRetrieval: ``finance - 지방은행 시중은행 전환 가이드.pdf - 4``).  Only a TREC file cannot hold
them, so the TREC writers of ragexam (``runs/*.trec`` of a run folder, ``ragexam convert --to trec``) write
every id through :func:`encode_trec_id` and ragexam's TREC readers of ids that map back to a corpus
(``ragexam convert`` from TREC qrels, BEIR qrels without tabs) decode them with :func:`decode_trec_id`:

* ``%`` becomes ``%25`` and every whitespace character (``str.isspace``) becomes ``%`` followed by the
  two upper-case hex digits of each byte of its UTF-8 encoding (a space is ``%20``, a tab ``%09``, an
  ideographic space ``%E3%80%80``); nothing else changes, so ids without ``%`` or whitespace -- all of
  ragexam's own and most data sets' -- are written as they are;
* decoding turns every ``%XX`` sequence back into its bytes (UTF-8), so ``decode(encode(x)) == x`` for
  every string.  A ``%`` not followed by two hex digits is kept as it is.

Since qrels and run files of one run are encoded alike, ``ragexam evaluate`` over them matches ids
without decoding.  An empty id cannot be written: it is an error.
"""

from __future__ import annotations

import re

__all__ = ["encode_trec_id", "decode_trec_id"]

_NEEDS = re.compile(r"[%\s]")
_ESCAPE = re.compile(r"(?:%[0-9A-Fa-f]{2})+")


def _escape(match: "re.Match[str]") -> str:
    return "".join(f"%{b:02X}" for b in match.group().encode("utf-8"))


def encode_trec_id(value: str) -> str:
    """``value`` with ``%`` and whitespace percent-encoded (module docstring)."""
    if not isinstance(value, str) or value == "":
        from ragexam.errors import InputError

        raise InputError(f"received {value!r}; a TREC file needs a non-empty id.", source="TREC writer", field="id")
    return _NEEDS.sub(_escape, value) if _NEEDS.search(value) else value


def decode_trec_id(value: str) -> str:
    """The id :func:`encode_trec_id` encoded as ``value``."""
    if "%" not in value:
        return value
    return _ESCAPE.sub(lambda m: bytes.fromhex(m.group().replace("%", "")).decode("utf-8", "surrogateescape"), value)
