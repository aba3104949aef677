"""How answers are scored: :class:`ScoreOptions`, every setting of ``ragexam score`` beyond its inputs, checked
once when it is made (``ragexam score`` and :func:`ragexam.analysis.answers.scoring.score_answers` both make one).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple, Union

from ragexam.analysis.judging.check import MIN_QUESTIONS, SCORE_SAMPLE
from ragexam.errors import InputError, integer_in, judge_needed, number_in, option
from ragexam.metrics.judge.metric import JudgeMetric
from ragexam.metrics.verdicts import CorrectIf
from ragexam.types import CorpusLike

__all__ = ["ScoreOptions", "check_min_coverage", "BLEU_TOKENIZERS", "MetricLike"]

#: ``bleu_tokenize`` values: ``auto`` (ko-kiwi for Korean, else 13a) or a tokenizer
BLEU_TOKENIZERS = ("auto", "none", "13a", "intl", "char", "ko-mecab", "ko-kiwi")
#: a judge metric: a name (built-in, or a custom rubric's) or a metric object
MetricLike = Union[str, JudgeMetric]


def check_min_coverage(value: object) -> float:
    """``value`` as a judge-coverage floor: a number from 0 to 1 (0.9 = 90 % of the items judged)."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not ok or not 0.0 <= float(value) <= 1.0:  # type: ignore[arg-type]
        raise InputError(f"received {value!r}; expected a fraction from 0 to 1, e.g. 0.9 for 90 % of the items "
                         "judged", source="score", field="min_coverage")
    return float(value)  # type: ignore[arg-type]


def _check_int(value: object, name: str, minimum: int) -> None:
    integer_in(value, None if minimum <= -(2 ** 62) else minimum, source="score", field=name)


@dataclass(frozen=True)
class ScoreOptions:
    """Every setting of a score but its inputs (questions, answers, run, judge and its metrics, human labels).

    :param answers_source: how the answers are named in messages and ``settings.answers``.
    :param pipeline: the pipeline of the run that answers without a ``pipeline`` field belong to.
    :param k: evidence counts as retrieved when ``first_rank <= k`` (default: each answer's ``k``, else the run's
        ``miss_k``, else 5).
    :param corpus: the run's corpus, only for a ``ragexam-run/1`` folder (to rebuild its chunk texts).
    :param repeat: judge every answer this many times (the judge checks it).
    :param correct_if: the text threshold for correctness when the judge does not grade ``answer_correctness``.
    :param abstain_phrases: the phrase list (default :data:`ragexam.metrics.verdicts.ABSTAIN_PHRASES`) when the
        judge does not grade ``abstention``.
    :param bleu_tokenize: one of :data:`BLEU_TOKENIZERS`.
    :param min_coverage: the judge coverage (0-1) below which a metric fails the score.
    :param seed: the seed of the judge intervals' bootstrap (default :data:`ragexam.stats.DEFAULT_SEED`).
    :param judge_check: with a judge, measure whether it separates good from bad on each metric it grades when no
        check of this judge, rubric, scoring and question set is recorded (:mod:`ragexam.analysis.answers.trusted`);
        ``False`` skips it (the metrics then read "not checked").
    :param judge_check_sample: the questions of that check (a seeded sample; default
        :data:`~ragexam.analysis.judging.check.SCORE_SAMPLE`).
    :param by: segment the answers by this field of their trace (``model``, ``day``, ``tag``, any other field of
        ``trace`` or key of the answer line: :mod:`ragexam.analysis.answers.segments`).
    :param baseline: the segment the others are compared with (default: the first).
    :param match_threshold: the e5 cosine at which a traced question is a near duplicate of an exam question
        (default: the threshold ``traces sample`` measured, :mod:`ragexam.analysis.answers.traffic`).
    """

    answers_source: str = "answers"
    pipeline: Optional[str] = None
    k: Optional[int] = None
    corpus: Optional[CorpusLike] = None
    repeat: int = 1
    correct_if: Optional[CorrectIf] = None
    abstain_phrases: Optional[Tuple[str, ...]] = None
    bleu_tokenize: str = "auto"
    min_coverage: Optional[float] = None
    seed: Optional[int] = None
    judge_check: bool = True
    judge_check_sample: int = SCORE_SAMPLE
    by: Optional[str] = None
    baseline: Optional[str] = None
    match_threshold: Optional[float] = None

    def __post_init__(self) -> None:
        if self.k is not None:
            _check_int(self.k, "--miss-k", 1)  # the option of `ragexam score` (ScoreRequest.miss_k)
        if self.bleu_tokenize not in BLEU_TOKENIZERS:
            raise InputError(f"received {self.bleu_tokenize!r}; expected auto, none, 13a, intl, char, ko-mecab or "
                             "ko-kiwi", source="score", field="bleu_tokenize")
        if self.min_coverage is not None:
            object.__setattr__(self, "min_coverage", check_min_coverage(self.min_coverage))
        if self.seed is not None:
            _check_int(self.seed, "seed", -(2 ** 63))
        if self.abstain_phrases is not None:
            object.__setattr__(self, "abstain_phrases", tuple(self.abstain_phrases))
        _check_int(self.judge_check_sample, "judge_check_sample", MIN_QUESTIONS)
        if self.by is not None and (not isinstance(self.by, str) or not self.by.strip()):
            raise InputError(f"received {self.by!r}; expected a trace field such as model, day or tag", source="score",
                             field="by")
        if self.baseline is not None and self.by is None:
            raise InputError("--baseline names a segment of --by; pass --by FIELD too", source="score",
                             field="baseline")
        t = self.match_threshold
        if t is not None:
            number_in(t, 0.0, 1.0, above=True, source="score", field="match_threshold", what="a cosine",
                      fix="E.g. 0.92.")

    def check_judge(self, *, judge: bool, human: bool, source: str = "score") -> None:
        """The settings that need an LLM judge have one (``judge``; ``human``: human labels were given)."""
        if self.min_coverage is not None and not judge:
            raise InputError(judge_needed(option("min_coverage")), source=source,
                             field="min_coverage")
        if human and not judge:
            raise InputError(judge_needed(f"{option('human')} (human labels correcting a judge's scores)"),
                             source=source,
                             field="human")
