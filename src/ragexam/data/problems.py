"""Problems found in input files, and the collector that either gathers them or raises.

A :class:`Problem` has a ``level`` (``"error"`` or ``"warning"``), a stable ``kind`` (see
:data:`KINDS`), the ``file``, the 1-based ``line``, the ``field`` and a ``message`` saying what was
received, what was expected and the fix.  Strict loading stops at the first error-level problem
with an :class:`ragexam.errors.InputError` carrying the same file, line, field and message;
validation collects every problem.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Dict, List, Optional

from ragexam.errors import InputError

__all__ = ["Problem", "ProblemCollector", "KINDS", "ERROR", "WARNING"]

ERROR = "error"
WARNING = "warning"

#: Every problem kind, its level and what it means.
KINDS: Dict[str, tuple] = {
    "bom": (ERROR, "the file starts with a UTF-8 byte-order mark"),
    "encoding": (ERROR, "the file is not valid UTF-8"),
    "empty_file": (ERROR, "the file has no records"),
    "invalid_json": (ERROR, "a line is not valid JSON"),
    "not_an_object": (ERROR, "a JSON line is not an object"),
    "csv_format": (ERROR, "a CSV header or row is malformed"),
    "file_format": (ERROR, "the file is in a format this input is not read from (a question set is JSON Lines)"),
    "missing_field": (ERROR, "a required field is absent"),
    "wrong_type": (ERROR, "a field has the wrong type"),
    "empty_value": (ERROR, "a required text is empty or blank"),
    "duplicate_id": (ERROR, "an id occurs twice"),
    "field_conflict": (ERROR, "an unknown field clashes with a metadata key"),
    "no_judgments": (ERROR, "a question has no relevance or evidence and is not marked answerable: false"),
    "answerable_conflict": (ERROR, "an answerable: false question carries relevant documents or evidence"),
    "duplicate_evidence": (ERROR, "two evidence strings of a question are equal after normalization"),
    "unknown_doc_id": (ERROR, "a judged document id is not in the corpus"),
    "unknown_query_id": (ERROR, "qrels judge a query id the queries file does not have"),
    "evidence_not_found": (ERROR, "an evidence string occurs in no document"),
    "run_would_refuse": (ERROR, "`ragexam run` would refuse: its grading rule cannot grade every answerable question"),
    "id_normalization": (WARNING, "two ids are the same text in other Unicode normalizations (NFC vs NFD)"),
    "unknown_field": (WARNING, "an unknown field looks like a known one (it is kept in metadata, not read as that field)"),
    "relevance_mismatch": (WARNING, "relevant_doc_ids and relevance disagree (relevance wins)"),
    "evidence_not_in_relevant": (WARNING, "evidence occurs only in documents outside relevant_doc_ids"),
    "evidence_outside_relevant": (WARNING, "evidence occurs in a relevant document and also in others"),
}


@dataclass(frozen=True)
class Problem:
    """One problem in an input file."""

    level: str
    kind: str
    file: Optional[str]
    line: Optional[int]
    field: Optional[str]
    message: str

    def __str__(self) -> str:
        return f"{self.level}: {InputError(self.message, source=self.file, line=self.line, field=self.field)}"

    def to_dict(self) -> Dict[str, object]:
        return asdict(self)


class ProblemCollector:
    """Gathers problems; with ``strict=True`` the first error-level problem raises ``InputError``."""

    def __init__(self, *, strict: bool) -> None:
        self.strict = strict
        self.problems: List[Problem] = []

    def add(self, kind: str, message: str, *, file: Optional[str], line: Optional[int] = None,
            field: Optional[str] = None) -> None:
        level = KINDS[kind][0]
        if self.strict and level == ERROR:
            raise InputError(message, source=file, line=line, field=field)
        self.problems.append(Problem(level, kind, file, line, field, message))

    @property
    def has_errors(self) -> bool:
        return any(p.level == ERROR for p in self.problems)
