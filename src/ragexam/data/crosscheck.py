"""Checks of a QA set against its corpus (used by strict ``load_qa`` and by ``validate``).

Errors: a judged document id (in ``relevant_doc_ids`` or ``relevance``) that is not in the
corpus (``unknown_doc_id``); an evidence string that occurs in no document after normalization
(``evidence_not_found``).

Warnings (only for questions with relevant documents, grade > 0): an evidence string that occurs
only in documents outside them (``evidence_not_in_relevant``), or in one of them and also in
others (``evidence_outside_relevant``; in evidence mode a chunk of those other documents also
earns credit).
"""

from __future__ import annotations

import unicodedata
from dataclasses import replace
from typing import Dict, Iterable, List, Optional, Sequence, Set

from ragexam.data.evidence import CorpusText
from ragexam.data.problems import ProblemCollector
from ragexam.data.schema import Document, Question
from ragexam.errors import setting

__all__ = ["check_qa_against_corpus"]


def _show(v: str, limit: int = 50) -> str:
    return repr(v) if len(v) <= limit else repr(v[: limit - 3] + "...")


def _list(ids, limit: int = 5) -> str:
    ids = list(ids)
    s = ", ".join(ids[:limit])
    return s + (f" and {len(ids) - limit} more" if len(ids) > limit else "")


def _invisible(text: str) -> bool:
    """Whether ``text`` holds an invisible format character (Unicode category Cf: a zero-width space, a soft
    hyphen, a zero-width joiner, a byte order mark inside the text, ...), which normalization keeps."""
    return any(unicodedata.category(ch) == "Cf" for ch in text)


def _visible(documents: Sequence[Document]) -> List[Document]:
    """The documents with their invisible format characters removed (for a hint only)."""
    return [replace(d, content="".join(ch for ch in d.content if unicodedata.category(ch) != "Cf"))
            for d in documents]


def _unknown_id_hint(d: str, known_ids: Set[str], nfc: Dict[str, str]) -> str:
    """A hint for an unknown document id that the corpus has in another Unicode normalization (Korean saved on
    macOS is often NFD: the same text, other code points); ``nfc`` (NFC form -> corpus id) is filled on first use."""
    if not nfc:
        nfc.update((unicodedata.normalize("NFC", k), k) for k in known_ids)
    twin = nfc.get(unicodedata.normalize("NFC", d))
    if twin is None:
        return ""
    return (f"; the corpus has {twin!r}, the same text in another Unicode normalization (NFC vs NFD, e.g. a file "
            "saved on macOS): ids are compared exactly, so save both files as NFC")


def check_qa_against_corpus(questions: Iterable[Question], qa_file: str, documents: Iterable[Document],
                            known_ids: Set[str], col: ProblemCollector, *, ignore_punctuation: bool = False,
                            corpus_text: Optional[CorpusText] = None) -> CorpusText:
    """Report every cross-file problem of ``questions`` to ``col``; returns the corpus text used.

    ``known_ids`` are all document ids of the corpus file (including records that had other
    problems, so one bad document does not also make every reference to it an error).
    """
    documents = list(documents)
    ct = corpus_text or CorpusText(documents, ignore_punctuation=ignore_punctuation)
    loose: Optional[CorpusText] = None
    visible: Optional[CorpusText] = None
    nfc: Dict[str, str] = {}
    questions = list(questions)
    ct.prefetch(ev for q in questions for ev in q.evidence)  # one pass over the corpus for all of them
    for q in questions:
        for fld, ids in (("relevant_doc_ids", q.relevant_doc_ids), ("relevance", list(q.relevance))):
            for d in ids:
                if d not in known_ids:
                    col.add("unknown_doc_id", f"document {d!r} is not in the corpus; expected a doc_id of "
                            "the corpus file (check the spelling or the corpus version)"
                            + _unknown_id_hint(d, known_ids, nfc), file=qa_file, line=q.line, field=fld)
        relevant = set(q.relevant_docs)
        for i, ev in enumerate(q.evidence, 1):
            docs = ct.docs_containing(ev)
            if not docs:
                hint = ""
                if not ct.ignore_punctuation:
                    if loose is None:
                        loose = CorpusText(documents, ignore_punctuation=True)
                    if loose.docs_containing(ev):
                        hint = (" It does occur when punctuation is ignored "
                                f"({setting('ignore_punctuation')}).")
                if not hint and not _invisible(ev) and any(_invisible(d.content) for d in documents):
                    if visible is None:
                        visible = CorpusText(_visible(documents), ignore_punctuation=ct.ignore_punctuation)
                    found = visible.docs_containing(ev)
                    if found:
                        hint = (f" It does occur in {_list(found)} once the invisible characters there (zero-width "
                                "spaces, soft hyphens: Unicode format characters) are removed: remove them from "
                                "the corpus, or copy the evidence with them.")
                col.add("evidence_not_found", f"evidence string {i} {_show(ev)} occurs in no document "
                        "(compared after NFKC and whitespace normalization); expected an exact quote of "
                        f"the source text.{hint}", file=qa_file, line=q.line, field="evidence")
                continue
            if not relevant:
                continue
            inside = [d for d in docs if d in relevant]
            outside = [d for d in docs if d not in relevant]
            if not inside:
                col.add("evidence_not_in_relevant", f"evidence string {i} {_show(ev)} occurs only in "
                        f"{_list(outside)}, none of them among the relevant documents "
                        f"{_list(sorted(relevant))}; add the document or fix the evidence",
                        file=qa_file, line=q.line, field="evidence")
            elif outside:
                col.add("evidence_outside_relevant", f"evidence string {i} {_show(ev)} occurs in the "
                        f"relevant {_list(inside)} and also in {_list(outside)}, which are not relevant; "
                        "in evidence mode their chunks also earn credit (make the evidence more specific, "
                        "or add those documents)", file=qa_file, line=q.line, field="evidence")
    return ct
