"""The typed products that pass between the stages of a generation (:mod:`.stages`).

=====================  =========================================================================================
product                what it holds
=====================  =========================================================================================
:class:`Task`          one generation call the *sample* stage planned: its kind, sections, messages, cache key
:class:`Reply`         what the *ask* stage got for a task (read from the value stored in the LLM cache)
:class:`Candidate`     one question the *parse* stage read from a reply, on its way through *verify* and
                       *llm-check* (its verification record grows there; ``rejection`` is set when it fails)
:class:`Ledger`        what a generation knows between passes: coverage, kept and rejected candidates, usage
:class:`Selection`     the *select* stage: the questions of the set, in order, and the surplus
(:class:`~ragexam.questions.output.GenerateResult`, the *write* stage's: the QA records, the rejects, the card)
:class:`PassEstimate`  a dry run's count of the first pass that would call the endpoint
:class:`GeneratePlan`  the dry run's answer
=====================  =========================================================================================
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Dict, FrozenSet, List, Mapping, Optional, Set, Tuple, Union

from ragexam.questions import checks as C
from ragexam.questions.sampling import Coverage, Section

__all__ = ["Task", "Reply", "Candidate", "Ledger", "Selection", "PassEstimate", "GeneratePlan", "DryRunStop", "Json",
           "Record"]

#: a JSON value as the LLM cache stores it and the output files hold it
Json = Union[None, bool, int, float, str, List["Json"], Dict[str, "Json"]]
#: one JSON object of an output file (a QA record, a reject, the card)
Record = Dict[str, Json]


@dataclass
class Task:
    """One generation call (the *sample* stage)."""

    index: int
    pass_no: int
    kind: str
    sections: Tuple[Section, ...]
    request: int
    messages: List[Dict[str, str]]
    key: str = ""
    #: sentence number -> sentence text (``--cite sentences``; ``--cite focus``: the focus sentences)
    numbers: Dict[int, str] = field(default_factory=dict)
    #: ``--cite focus``: the call asks for one question that ``numbers``' sentences answer
    focus: bool = False

    @property
    def section_ids(self) -> Tuple[str, ...]:
        return tuple(s.sid for s in self.sections)

    @property
    def doc_ids(self) -> Tuple[str, ...]:
        return tuple(dict.fromkeys(s.doc_id for s in self.sections))


@dataclass(frozen=True)
class Reply:
    """What a generation call gave (the *ask* stage): ``status`` ``ok`` (``items``: the questions read), ``invalid``
    (no usable reply after the attempts) or ``failed`` (the transport failed; not cached), with the ``reason``,
    ``message``, the attempts' ``errors`` and the last ``reply`` text when it is not ``ok``."""

    status: str
    items: Tuple[Json, ...] = ()
    reason: Optional[str] = None
    message: Optional[str] = None
    errors: Tuple[Json, ...] = ()
    reply: Optional[str] = None

    @classmethod
    def from_value(cls, value: Mapping[str, Json]) -> "Reply":
        """The reply of a value as :func:`ragexam.questions.calls.call` stores it in the LLM cache."""
        items = value.get("items")
        errors = value.get("errors")
        reply = value.get("reply")
        return cls(str(value.get("status")), tuple(items) if isinstance(items, list) else (),
                   _text(value.get("reason")), _text(value.get("message")),
                   tuple(errors) if isinstance(errors, list) else (), reply if isinstance(reply, str) else None)


def _text(v: Json) -> Optional[str]:
    return None if v is None else str(v)


@dataclass
class Candidate:
    """A question proposed by the model, on its way through the checks; what each check found is kept here (the
    verification record of :func:`ragexam.questions.output.candidate_record`)."""

    cid: str
    seq: Tuple[int, int, int]
    kind: str
    pass_no: int
    call: str
    sections: Tuple[str, ...]
    doc_ids: Tuple[str, ...]
    raw: Json
    question: str = ""
    answer: str = ""
    evidence: List[str] = field(default_factory=list)
    model_type: Optional[str] = None
    located: List[C.Located] = field(default_factory=list)
    relevant: List[str] = field(default_factory=list)
    overlap: Optional[float] = None
    anchors: List[str] = field(default_factory=list)
    style: Optional[str] = None
    type: Optional[str] = None
    grams: FrozenSet[str] = frozenset()
    answer_check: Dict[str, Json] = field(default_factory=dict)
    ooc_check: Dict[str, Json] = field(default_factory=dict)
    cited: List[int] = field(default_factory=list)
    critic: Dict[str, Json] = field(default_factory=dict)
    reader: Dict[str, Json] = field(default_factory=dict)
    rejection: Optional[C.Rejection] = None

    @property
    def answerable(self) -> bool:
        return self.kind != "out_of_corpus"


@dataclass
class Ledger:
    """What a generation knows between passes (each stage reads and adds to it)."""

    coverage: Coverage
    pass_no: int = 0
    tasks: List[Task] = field(default_factory=list)
    kept: List[Candidate] = field(default_factory=list)
    rejected: List[Candidate] = field(default_factory=list)
    call_rejects: List[Record] = field(default_factory=list)
    kept_grams: List[Tuple[str, FrozenSet[str]]] = field(default_factory=list)
    proposed: Dict[str, List[str]] = field(default_factory=dict)
    asked: Dict[str, int] = field(default_factory=dict)
    kept_by_kind: Dict[str, int] = field(default_factory=dict)
    samples: Counter = field(default_factory=Counter)
    usage: Dict[str, Dict[str, Json]] = field(default_factory=dict)
    notes: Set[str] = field(default_factory=set)
    exhausted: Set[Tuple[str, str]] = field(default_factory=set)
    #: ``--cite focus``: (section, sentence index) already asked about
    focus_used: Set[Tuple[str, int]] = field(default_factory=set)
    stop: Optional[str] = None
    candidates_seen: int = 0
    #: LLM check calls per candidate expected before any candidate was checked
    initial_check_rate: float = 0.5

    @property
    def kept_types(self) -> List[str]:
        return [x.type or "?" for x in self.kept]

    @property
    def calls_made(self) -> float:
        return float(sum(_number(u.get("calls")) for u in self.usage.values()))

    @property
    def generation_calls_made(self) -> int:
        """Generation calls this run made (cached replies are free)."""
        return int(_number(self.usage.get("generation", {}).get("calls")))

    @property
    def spent_usd(self) -> float:
        return float(sum(_number(u.get("cost_usd")) for u in self.usage.values()))

    def check_share(self) -> float:
        """LLM check calls made per candidate so far (:attr:`initial_check_rate` before any is known)."""
        if not self.candidates_seen:
            return self.initial_check_rate
        return _number(self.usage.get("checks", {}).get("calls")) / self.candidates_seen

    def add_usage(self, what: str, usage: Mapping[str, Json]) -> None:
        cur = self.usage.setdefault(what, {})
        for k, v in usage.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                old = cur.get(k, 0)
                cur[k] = (old if isinstance(old, (int, float)) else 0) + v
            elif k not in cur:
                cur[k] = v

    def keep(self, x: Candidate) -> None:
        self.kept.append(x)
        if x.type == x.kind:
            self.kept_by_kind[x.kind] = self.kept_by_kind.get(x.kind, 0) + 1
        self.candidates_seen += 1

    def reject(self, x: Candidate) -> None:
        self.rejected.append(x)
        self.candidates_seen += 1

    def reject_call(self, record: Record) -> None:
        self.call_rejects.append(record)


def _number(v: Json) -> float:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0.0


@dataclass(frozen=True)
class Selection:
    """The *select* stage: the ``chosen`` questions in generation order, and the ``surplus``."""

    chosen: List[Candidate]
    surplus: List[Candidate]


@dataclass(frozen=True)
class PassEstimate:
    """What the first pass of a dry run that would call the endpoint costs: its generation ``calls`` to make
    (``cached`` already in the cache), its LLM ``checks`` (exactly when ``checks_exact``, else an upper bound) and
    the estimated tokens."""

    pass_no: int
    calls: int
    cached: int
    checks: int
    checks_exact: bool
    prompt_tokens: int
    completion_tokens: int


class DryRunStop(Exception):
    """Raised inside a dry run at the first stage that would call the endpoint (generation or checks)."""

    def __init__(self, estimate: PassEstimate) -> None:
        super().__init__("dry run")
        self.estimate = estimate


@dataclass
class GeneratePlan:
    """A dry run: what the next uncached pass would call (see :func:`ragexam.questions.stages.plan_set`)."""

    model: str
    endpoint: str
    judge_model: str
    language: str
    n: int
    targets: Dict[str, int]
    cached_passes: int
    kept_so_far: int
    next_pass: Optional[int]
    generation_calls: int
    generation_cached: int
    check_calls: int
    check_calls_exact: bool
    est_prompt_tokens: int
    est_completion_tokens: int
    est_cost: Union[float, str]
    note: str
    #: the prompt file the run will use (its label, ``questions/en/v3@…``); ``language`` is the questions' language
    prompts: str = ""
    cite: str = ""
    #: who makes the LLM checks, in words (:func:`ragexam.questions.output.checked_by_text`)
    checked_by: str = ""
    max_generation_calls: Optional[int] = None
    #: what the set's card will note before any call (the default mix without ``multi``, ...)
    notes: List[str] = field(default_factory=list)

    def to_dict(self) -> Record:
        return {"model": self.model, "endpoint": self.endpoint, "judge_model": self.judge_model,
                "language": self.language, "n": self.n, "targets": dict(self.targets),
                "cached_passes": self.cached_passes, "kept_so_far": self.kept_so_far, "next_pass": self.next_pass,
                "generation_calls": self.generation_calls, "generation_cached": self.generation_cached,
                "check_calls": self.check_calls, "check_calls_exact": self.check_calls_exact,
                "est_prompt_tokens": self.est_prompt_tokens, "est_completion_tokens": self.est_completion_tokens,
                "est_cost_usd": self.est_cost,
                "token_rule": "ceil(chars/3) of each prompt + 160 completion tokens per question asked",
                "note": self.note, "prompts": self.prompts, "cite": self.cite, "checked_by": self.checked_by,
                "max_generation_calls": self.max_generation_calls, "notes": list(self.notes)}
