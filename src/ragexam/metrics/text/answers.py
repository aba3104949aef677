"""The text metrics of generated answers against their references, as ``ragexam score`` computes them: each
answer's summable statistics (one row per answer; every text tokenized once), and the corpus scores of any subset
of the answers from the sums of its rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

import numpy as np

from ragexam.metrics.text.bleu import BleuResult, bleu_from_stats, bleu_stats
from ragexam.metrics.text.chrf import ChrfResult, chrf_from_stats, chrf_stats
from ragexam.metrics.text.rouge import rouge_l_signature, rouge_l_stats

__all__ = ["AnswerStatistics", "answer_statistics", "CorpusScores", "corpus_scores"]

#: per answer: BLEU's, chrF's and ROUGE-L's statistics (a row each)
AnswerStatistics = Tuple[np.ndarray, np.ndarray, np.ndarray]


def answer_statistics(hyps: List[str], refs: List[str], bleu_tokenize: str, rouge_tokenize: str) -> AnswerStatistics:
    """``(bleu, chrf, rouge)``: the per-answer summable statistics of ``hyps`` against one reference each.  A
    module-level function of picklable arguments: ``ragexam score`` runs it in a process beside the judge's calls
    (:class:`ragexam.exec.beside.Beside`)."""
    return (bleu_stats(hyps, refs, tokenize=bleu_tokenize), chrf_stats(hyps, refs),
            rouge_l_stats(hyps, refs, tokenize=rouge_tokenize))


@dataclass(frozen=True)
class CorpusScores:
    """Corpus BLEU, corpus chrF and mean ROUGE-L F of a set of answers, with ROUGE-L's signature."""

    bleu: BleuResult
    chrf: ChrfResult
    rouge_l: float
    rouge_l_signature: str


def corpus_scores(stats: AnswerStatistics, rows: Sequence[int], bleu_tokenize: str,
                  rouge_tokenize: str) -> Optional[CorpusScores]:
    """The corpus scores of the answers ``rows`` (indices into ``stats``) from the sums of their statistics;
    ``None`` for no answers."""
    if not rows:
        return None
    bleu, chrf, rouge = stats
    idx = list(rows)
    return CorpusScores(bleu_from_stats(bleu[idx].sum(axis=0), tokenize=bleu_tokenize),
                        chrf_from_stats(chrf[idx].sum(axis=0)), float(rouge[idx, 2].mean()),
                        rouge_l_signature(rouge_tokenize))
