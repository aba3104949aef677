"""Surface text metrics for generated answers: BLEU, chrF/chrF++ and ROUGE-L.

BLEU and chrF are identical to sacrebleu 2.6 (scores divided by 100, so everything is in
[0, 1]); ROUGE-L is LCS-based.  Every result carries a signature string of the settings
that produced it.  Each metric also reduces a segment to summable statistics
(:func:`bleu_stats`, :func:`chrf_stats`, :func:`rouge_l_stats`) so that corpus scores,
subsets and bootstrap resamples are one numpy step.

References are passed **per segment**: ``references[i]`` is a string or a list of strings
for ``hypotheses[i]`` (the transpose of sacrebleu's ``refs[k][i]`` streams).

:func:`handout_bleu` is the lecture's hand-written BLEU, kept for comparison only; it is not
standard BLEU.
"""

from ragexam.metrics.text.bleu import (
    BLEU_STATS_COLUMNS,
    BleuResult,
    bleu_from_stats,
    bleu_scores,
    bleu_stats,
    corpus_bleu,
    sentence_bleu,
)

__all__ = [
    "BLEU_STATS_COLUMNS", "BleuResult", "bleu_from_stats", "bleu_scores", "bleu_stats",
    "corpus_bleu", "sentence_bleu",
]
from ragexam.metrics.text.chrf import (  # noqa: E402
    ChrfResult,
    chrf_from_stats,
    chrf_scores,
    chrf_stats,
    chrf_stats_columns,
    corpus_chrf,
    sentence_chrf,
)

__all__ += ["ChrfResult", "chrf_from_stats", "chrf_scores", "chrf_stats", "chrf_stats_columns",
            "corpus_chrf", "sentence_chrf"]
from ragexam.metrics.text.handout import HandoutBleuResult, handout_bleu  # noqa: E402
from ragexam.metrics.text.rouge import (  # noqa: E402
    ROUGE_L_STATS_COLUMNS,
    RougeLResult,
    corpus_rouge_l,
    lcs_length,
    rouge_l_stats,
    sentence_rouge_l,
)

__all__ += ["HandoutBleuResult", "handout_bleu", "ROUGE_L_STATS_COLUMNS", "RougeLResult",
            "corpus_rouge_l", "lcs_length", "rouge_l_stats", "sentence_rouge_l"]
