"""Validation of a corpus and a QA set: every problem at once, with counts by kind.

:func:`validate` reads both files in collecting mode (see :mod:`ragexam.data.loaders`), then
checks the QA set against the corpus (:mod:`ragexam.data.crosscheck`).  The problem kinds and
their levels are listed in :data:`ragexam.data.problems.KINDS`.  A report is ``ok`` when it has
no error-level problem (warnings allowed).  A missing file is a bad invocation and raises
``InputError`` instead of being reported.  A corpus that cannot be read at all (UTF-16) skips
the cross-file checks (they would only repeat the same failure).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Union

from ragexam.data.gradability import Gradability
from ragexam.data.problems import ERROR, KINDS, WARNING, Problem, ProblemCollector

__all__ = ["ValidationReport", "validate"]

PathLike = Union[str, Path]


@dataclass
class ValidationReport:
    """All problems found in ``corpus`` (and ``qa``), in file then line order."""

    corpus: str
    qa: Optional[str]
    problems: List[Problem] = field(default_factory=list)
    documents: int = 0
    questions: int = 0
    #: what each grading rule can grade and whether ``ragexam run`` would refuse (with a question set)
    grading: Optional[Gradability] = None

    @property
    def errors(self) -> List[Problem]:
        return [p for p in self.problems if p.level == ERROR]

    @property
    def warnings(self) -> List[Problem]:
        return [p for p in self.problems if p.level == WARNING]

    @property
    def ok(self) -> bool:
        """No error-level problem."""
        return not self.errors

    def counts_by_kind(self) -> Dict[str, int]:
        """``{kind: number of problems}`` in the order of :data:`KINDS`, kinds with none omitted."""
        counts = {k: 0 for k in KINDS}
        for p in self.problems:
            counts[p.kind] = counts.get(p.kind, 0) + 1
        return {k: n for k, n in counts.items() if n}

    def to_dict(self) -> Dict[str, object]:
        return {"ok": self.ok, "corpus": self.corpus, "qa": self.qa, "documents": self.documents,
                "questions": self.questions, "errors": len(self.errors), "warnings": len(self.warnings),
                "counts": self.counts_by_kind(), "problems": [p.to_dict() for p in self.problems],
                "grading": self.grading.to_dict() if self.grading is not None else None}


def validate(corpus_path: PathLike, qa_path: Optional[PathLike] = None, *,
             ignore_punctuation: bool = False, split: Optional[str] = None,
             relevance: Optional[str] = None) -> ValidationReport:
    """Check a corpus (and a QA set against it), collecting every problem, and predict ``ragexam run``.

    ``corpus_path``/``qa_path`` are paths or bundled dataset names.  ``ignore_punctuation`` is the
    evidence-matching setting (:func:`ragexam.data.normalization.normalize`).  ``split`` is the qrels split
    of a BEIR folder given as ``qa_path`` (default ``test``, else its only split; ``--split``).  With a question
    set, :attr:`ValidationReport.grading` counts what each grading rule can grade; when the run's rule
    (``relevance``, default: the run's default) cannot grade every answerable question, the run would refuse: an
    error ``run_would_refuse`` saying which flag or command fixes it (:mod:`ragexam.data.gradability`).
    """
    from ragexam.data.crosscheck import check_qa_against_corpus
    from ragexam.data.gradability import gradability
    from ragexam.data.datasets import resolve
    from ragexam.data.loaders import parse_corpus, parse_qa

    # resolve both first: a bad invocation fails before any work
    cpath = resolve(corpus_path, "corpus")
    qpath = resolve(qa_path, "qa") if qa_path is not None else None
    if split is not None and (qpath is None or not qpath.is_dir()):
        from ragexam.errors import InputError

        raise InputError(f"received {split!r}, but the question set {'is not given' if qpath is None else 'is a file'}"
                         "; --split chooses the qrels of a BEIR folder given as --qa (qrels/<split>.tsv).",
                         source="--split", field="split")
    col = ProblemCollector(strict=False)
    parsed_corpus = parse_corpus(cpath, col)
    report = ValidationReport(parsed_corpus.file, str(qpath) if qpath is not None else None,
                              documents=len(parsed_corpus.documents))
    if qpath is not None:
        parsed_qa = parse_qa(qpath, col, split=split)
        report.questions = len(parsed_qa.questions)
        if parsed_corpus.readable:
            check_qa_against_corpus(parsed_qa.questions, parsed_qa.file, parsed_corpus.documents,
                                    parsed_corpus.ids, col, ignore_punctuation=ignore_punctuation)
        if parsed_qa.questions:
            report.grading = gradability(parsed_qa.questions, relevance, corpus=str(corpus_path), qa=str(qa_path),
                                         known=set(parsed_corpus.ids) if parsed_corpus.readable else None)
    order = {report.corpus: 0, report.qa: 1}
    report.problems = sorted(col.problems, key=lambda p: (order.get(p.file, 2), p.line or 0))
    if report.grading is not None and report.grading.refusal is not None:  # last: the sum of what is above
        # about the grading rule, not a field of the set: labelled by the option that chooses the rule
        report.problems.append(Problem(ERROR, "run_would_refuse", report.qa, None, "--relevance",
                                       report.grading.refusal))
    return report
