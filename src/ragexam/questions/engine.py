"""The question generator: passes of LLM calls, every candidate verified, a set that reaches its mix.

::

    from ragexam.questions import generate

    res = generate("docs.jsonl", n=200, model="gpt-4o-mini", out="qa.jsonl")
    res.card["mix"]            # target vs achieved per type
    res.card["rejections"]     # reason -> count

How a set is made
-----------------
1. The corpus is cut into sections (:mod:`.sampling`), its language is detected (Hangul share of a
   sample, as everywhere in ragexam) and the prompt file of that language is loaded (:mod:`.prompts`).
   The mix (default ``meaning=0.4,lexical=0.35,multi=0.15,out_of_corpus=0.1``) becomes a target count
   per type.
2. **Passes.**  Each pass asks, for every type still short of its target, for
   ``ceil(deficit / (per_call * yield))`` calls (``yield``: the share of that kind's requested
   questions kept so far, 0.7 before any is known, at least 0.2; a kind of which none of 8 questions
   asked for was kept is asked for no more, with a note), interleaving the kinds, each call
   on the next section in coverage order (every section once before any twice; a pass uses a section
   at most once).  A ``multi`` call adds the section's most related section of another document;
   an ``out_of_corpus`` call shows one section and the corpus's document titles.  A section shown
   again gets the questions already proposed from it ("do not repeat these").  All calls of a pass go
   through :func:`ragexam.llm.batch.run_calls` (cache, resume, concurrency, in-flight sharing).  A reply
   that breaks the contract gets feedback and another attempt (``max_attempts`` replies in all).
3. **Verification** of every candidate, in task order (:mod:`.checks`): shape, question, evidence
   (verbatim in a shown document, offsets stored, other occurrences joined or dropped), answer,
   copy, near-duplicate; then the LLM checks through the judge
   (:class:`ragexam.metrics.judge.Judge`, temperature 0): an answer that is not contained in its
   evidence must be fully supported by it (``faithfulness`` = 1 with the evidence strings as
   contexts); an out-of-corpus candidate is searched with the retriever over the sections and every
   top section must be judged at most ``ooc_max_relevance`` on ``context_relevance`` (1-5; 5 is
   "directly answers").  The *type* is measured (:mod:`.measure`): ``out_of_corpus``, ``multi`` (no single
   document holds all of its evidence), a user kind, else ``lexical``/``meaning``.
4. Passes stop when every target is met, when a pass keeps nothing (the model cannot do better with
   these prompts), at ``max_passes``, or when ``max_calls``/``budget`` leaves no room.
5. **Selection**: the kept questions in generation order, up to each type's target; when some type
   fell short, the set is filled up to ``n`` from the other types' extra questions; the rest are
   ``surplus``.  Query ids are ``<id_prefix>_0001``, ... in that order.

Everything is deterministic given the cached replies: a rerun -- or a run resumed after ``kill -9`` --
repeats no finished call and writes the same set.  ``max_calls`` and ``budget`` count the calls this
run makes (cached results are free); a call is planned only when it and its worst-case checks fit.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, FrozenSet, List, Mapping, Optional, Sequence, Set, Tuple, Union

from ragexam import fmt
from ragexam.metrics.judge.builtin.answer_correctness import METRIC as CORRECTNESS
from ragexam.metrics.judge.builtin.context_relevance import METRIC as RELEVANCE
from ragexam.metrics.judge.builtin.faithfulness import METRIC as FAITHFULNESS
from ragexam.questions import checks as C
from ragexam.questions import measure as M
from ragexam.questions.llm_checks import LLM_CHECKS, Checker, StopDry
from ragexam.questions.prompts import CITE_MODES, PromptSet, load_prompts, load_reader, reply_schema
from ragexam.questions.sampling import (Coverage, Pairs, Section, build_sections, check_kinds, parse_mix,
                                                targets)
from ragexam.errors import InputError

__all__ = ["GenerateConfig", "GenerateResult", "GeneratePlan", "Candidate", "Generator", "CALL_FORMAT",
           "DEFAULT_SEED", "DEFAULT_TEMPERATURE", "FOCUS_TEMPERATURE", "default_temperature"]

CALL_FORMAT = "ragexam-questions-call/1"
DEFAULT_SEED = 12345
#: completion-token allowance per requested question (dry-run estimate)
TOKENS_PER_QUESTION = 160
#: maximum questions remembered per section for the "already written" list
AVOID_MAX = 12
#: initial expected share of kept questions per kind, and its floor
INITIAL_YIELD = 0.7
MIN_YIELD = 0.2
#: a kind of which none of this many questions asked for was kept is not asked for again
GIVE_UP_AFTER = 8
DEFAULT_MAX_TOKENS = 2048
#: the completion limit of a ``--cite focus`` call (one question and a short answer)
FOCUS_MAX_TOKENS = 400
#: the generator's sampling temperature when none is given: varied questions from a passage asked several times;
#: in the focus mode every call is about another sentence and the local 1.5B model wrote worse questions sampled
#: (docs/generate.md, "Measured on a real model"), so greedy
DEFAULT_TEMPERATURE = 0.7
FOCUS_TEMPERATURE = 0.0


def default_temperature(cite: str = "auto") -> float:
    """The generator's temperature when none is given, for citation mode ``cite`` (``auto``: the default mode)."""
    return FOCUS_TEMPERATURE if (cite if cite != "auto" else DEFAULT_CITE) == "focus" else DEFAULT_TEMPERATURE
#: the instruction language of the prompts when none is chosen (measured: docs/generate.md, "Prompts")
DEFAULT_PROMPT_LANGUAGE = "en"
#: how the model cites evidence when not chosen (measured: docs/generate.md, "Citation modes")
DEFAULT_CITE = "focus"
#: every check that can be switched off: the deterministic ``injection`` (addresses_model), ``guards``
#: (not_a_question, off_topic, ...) and ``premise`` (:func:`.checks.premise_problem`), and the LLM checks of
#: :mod:`.llm_checks`
CHECKS: Tuple[str, ...] = ("injection", "guards", "premise") + LLM_CHECKS
#: terms two sentences must share to be asked about together (``--cite focus``, multi)
MULTI_SHARED_TERMS = 2
#: a sentence that leans on its neighbours: it opens with a pointer back or a link (이/그/위/이 경우/다만/또한/This/
#: However, ...), points up or down (위 방법, 아래와 같이, the following, as follows), or introduces a list (… 다음과
#: 같습니다, a colon at the end); ``--cite focus`` asks about none
_LEANS = re.compile(r"^(?:이|그|위|아래|저)(?:\s|것|곳|때|러|런|렇|와|에|의|를|은|는|가|로)|^(?:다만|또한|단,|단 |이때|이 경우|그 밖|"
                    r"그러나|하지만|따라서|그래서|그리고|또는|한편)|다음과 같|아래와 같|위와 같|위 방법|위의 |"
                    r"[:：]\s*$|^(?:this|that|these|those|it|they|however|but|also|otherwise|then|in this case|in that case)\b|"
                    r"\b(?:the following|as follows|listed below|above|below)\b", re.I)
#: a sentence a lexical focus question prefers: it holds a digit, a Latin letter or a quotation mark
_ANCHORED = re.compile(r"[0-9A-Za-z'\"‘’“”「」]")


@dataclass(frozen=True)
class GenerateConfig:
    """Settings of a generation (validated on construction; see the module docstring).

    :ivar n: questions wanted.  :ivar mix: kind -> weight (``None``: :data:`.sampling.DEFAULT_MIX`) or
        ``"kind=w,..."``.  :ivar kinds: extra kinds, name -> instruction.  :ivar per_call: questions
        asked per call (1-10).  :ivar language: ``auto`` | ``ko`` | ``en`` (prompts and decline text).
    :ivar prompt: a prompt file replacing the bundled one.  :ivar section_chars: section size.
    :ivar seed: sampling seed (also sent to the endpoint).  :ivar ambiguous: ``join`` | ``drop``.
    :ivar dedup_at, copy_at, lexical_at: thresholds of :mod:`.measure`.  :ivar min_evidence_chars,
        max_evidence_chars: evidence length limits (normalised characters).  :ivar retriever: spec
        used for related sections and the out-of-corpus search.  :ivar ooc_top: sections retrieved
        per out-of-corpus candidate.  :ivar ooc_max_relevance: highest judged relevance (1-5) a top
        section may have.  :ivar max_attempts: replies per call.  :ivar max_passes: passes at most.
    :ivar max_calls, budget: spending limits of this run (calls; USD).  :ivar id_prefix: query id prefix.
    :ivar cite: how the model cites evidence: ``spans`` (copied text; quote frames unwrapped),
        ``sentences`` (numbers of the shown sentences) or ``focus`` (ragexam chooses a sentence -- two for
        ``multi`` -- and the model writes one question it answers, after worked examples; ``per_call`` is 1).  :ivar prompt_language: the language of the
        instructions (``auto``: :data:`DEFAULT_PROMPT_LANGUAGE`; the questions are always in the corpus's
        language).  :ivar skip_checks: checks switched off (names of :data:`CHECKS`).  :ivar agree_at: the
        answer_correctness score (1-5) at which the reader's answer agrees with the key.
    """

    n: int
    mix: Any = None
    kinds: Mapping[str, str] = field(default_factory=dict)
    per_call: int = 3
    language: str = "auto"
    prompt: Optional[str] = None
    section_chars: int = 1500
    seed: int = DEFAULT_SEED
    ambiguous: str = "join"
    dedup_at: float = 0.5
    copy_at: float = 0.8
    lexical_at: float = 0.7
    min_evidence_chars: int = 8
    max_evidence_chars: int = 300
    retriever: str = "bm25"
    ooc_top: int = 5
    ooc_max_relevance: int = 3
    max_attempts: int = 3
    max_passes: int = 30
    max_calls: Optional[int] = None
    budget: Optional[float] = None
    id_prefix: str = "gen"
    cite: str = "auto"
    prompt_language: str = "auto"
    skip_checks: Tuple[str, ...] = ()
    agree_at: int = 4

    def __post_init__(self) -> None:
        def integer(name: str, low: int, high: Optional[int] = None, optional: bool = False) -> None:
            v = getattr(self, name)
            if optional and v is None:
                return
            if isinstance(v, bool) or not isinstance(v, int) or v < low or (high is not None and v > high):
                rng = f"from {low} to {high}" if high is not None else f">= {low}"
                raise InputError(f"received {v!r}; expected an integer {rng}", source=_opt(name), field=name)

        def number(name: str, low: float, high: float, optional: bool = False) -> None:
            v = getattr(self, name)
            if optional and v is None:
                return
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not low <= v <= high:
                raise InputError(f"received {v!r}; expected a number from {low:g} to {high:g}", source=_opt(name),
                                 field=name)

        integer("n", 1)
        integer("per_call", 1, 10)
        integer("section_chars", 200)
        integer("min_evidence_chars", 1)
        integer("max_evidence_chars", 1)
        integer("ooc_top", 1, 20)
        integer("ooc_max_relevance", 1, 4)
        integer("max_attempts", 1, 10)
        integer("max_passes", 1)
        integer("max_calls", 1, optional=True)
        integer("agree_at", 1, 5)
        if self.cite not in ("auto",) + CITE_MODES:
            raise InputError(f"received {self.cite!r}; expected spans (the model copies the evidence text), "
                             "sentences (the model cites numbered sentences) or focus (ragexam chooses the sentence, "
                             "the model writes one question about it)", source="--cite", field="cite")
        if self.prompt_language not in ("auto", "ko", "en"):
            raise InputError(f"received {self.prompt_language!r}; expected auto, ko or en", source="--prompt-lang",
                             field="prompt_language")
        skip = (self.skip_checks,) if isinstance(self.skip_checks, str) else tuple(self.skip_checks or ())
        bad = [k for k in skip if k not in CHECKS]
        if bad:
            raise InputError(f"unknown check {bad[0]!r}; expected some of {', '.join(CHECKS)}", source="--skip-check",
                             field="skip_checks")
        object.__setattr__(self, "skip_checks", tuple(dict.fromkeys(skip)))
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise InputError(f"received {self.seed!r}; expected an integer", source="--seed", field="seed")
        number("dedup_at", 0.0, 1.0)
        number("copy_at", 0.0, 1.0)
        number("lexical_at", 0.0, 1.01)
        number("budget", 0.0, float("inf"), optional=True)
        if self.min_evidence_chars > self.max_evidence_chars:
            raise InputError(f"min {self.min_evidence_chars} > max {self.max_evidence_chars}",
                             source="--min-evidence-chars", field="min_evidence_chars")
        if self.language not in ("auto", "ko", "en"):
            raise InputError(f"received {self.language!r}; expected auto, ko or en", source="--lang", field="language")
        if self.ambiguous not in ("join", "drop"):
            raise InputError(f"received {self.ambiguous!r}; expected join (other documents holding the evidence "
                             "become relevant) or drop (the question is rejected)", source="--ambiguous",
                             field="ambiguous")
        if not isinstance(self.id_prefix, str) or not self.id_prefix or any(c.isspace() for c in self.id_prefix):
            raise InputError(f"received {self.id_prefix!r}; expected a non-empty prefix without whitespace",
                             source="--id-prefix", field="id_prefix")
        if not isinstance(self.retriever, str) or not self.retriever.strip():
            raise InputError(f"received {self.retriever!r}; expected a retriever spec such as bm25",
                             source="--retriever", field="retriever")
        if "|" in self.retriever:
            raise InputError(f"received {self.retriever!r}; a spec with '|' cannot go into a signature",
                             source="--retriever", field="retriever")


def _opt(name: str) -> str:
    return "--" + name.replace("_", "-")


# -- candidates ---------------------------------------------------------------------------------------------
@dataclass
class _Task:
    """One generation call."""

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


@dataclass
class Candidate:
    """A question proposed by the model, on its way through the checks."""

    cid: str
    seq: Tuple[int, int, int]
    kind: str
    pass_no: int
    call: str
    sections: Tuple[str, ...]
    doc_ids: Tuple[str, ...]
    raw: Any
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
    answer_check: Dict[str, Any] = field(default_factory=dict)
    ooc_check: Dict[str, Any] = field(default_factory=dict)
    cited: List[int] = field(default_factory=list)
    critic: Dict[str, Any] = field(default_factory=dict)
    reader: Dict[str, Any] = field(default_factory=dict)
    rejection: Optional[C.Rejection] = None

    @property
    def answerable(self) -> bool:
        return self.kind != "out_of_corpus"


@dataclass
class GenerateResult:
    """The set (``records``: QA records in output order), ``rejects`` (one dict per rejected candidate,
    reply or call), the ``card`` and the ``signature``."""

    records: List[Dict[str, Any]]
    rejects: List[Dict[str, Any]]
    card: Dict[str, Any]
    signature: str
    language: str
    corpus_source: Optional[str] = None

    @property
    def shortfall(self) -> int:
        """Questions missing to reach ``n``."""
        return max(0, int(self.card["n_requested"]) - len(self.records))

    def save(self, out: Union[str, Path]) -> Dict[str, Path]:
        """Write the set and its side files (:func:`ragexam.questions.output.write_outputs`)."""
        from ragexam.questions.output import write_outputs

        return write_outputs(self, out)


@dataclass
class GeneratePlan:
    """A dry run: what the next uncached pass would call (see :meth:`Generator.plan`)."""

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

    def to_dict(self) -> Dict[str, Any]:
        return {"model": self.model, "endpoint": self.endpoint, "judge_model": self.judge_model,
                "language": self.language, "n": self.n, "targets": self.targets, "cached_passes": self.cached_passes,
                "kept_so_far": self.kept_so_far, "next_pass": self.next_pass,
                "generation_calls": self.generation_calls, "generation_cached": self.generation_cached,
                "check_calls": self.check_calls, "check_calls_exact": self.check_calls_exact,
                "est_prompt_tokens": self.est_prompt_tokens, "est_completion_tokens": self.est_completion_tokens,
                "est_cost_usd": self.est_cost,
                "token_rule": "ceil(chars/3) of each prompt + 160 completion tokens per question asked",
                "note": self.note}


class _Stop(Exception):
    """Raised inside a dry run at the first pass that would call the endpoint."""

    def __init__(self, plan: Dict[str, Any]) -> None:
        super().__init__("dry run")
        self.plan = plan


# -- the generator ------------------------------------------------------------------------------------------
class Generator:
    """One generation over one corpus (see the module docstring).

    :param corpus: a :class:`~ragexam.data.schema.Corpus`, a corpus file or a bundled name.
    :param config: a :class:`GenerateConfig`.
    :param settings: the generator's :class:`~ragexam.llm.settings.LLMSettings`.
    :param judge_model: the model of the LLM checks (default: the generator's), same endpoint.
    :param progress: called as ``progress(label, done, total)`` while calls run.
    """

    def __init__(self, corpus: Any, config: GenerateConfig, settings: Any, *, judge_model: Optional[str] = None,
                 progress: Optional[Callable[[str, int, int], None]] = None) -> None:
        from ragexam.data.loaders import load_corpus
        from ragexam.data.schema import Corpus
        from ragexam.llm.client import LLMClient
        from ragexam.llm.cost import price_for
        from ragexam.metrics.judge import Judge

        self.config = config
        if config.seed != settings.seed:
            settings = settings.replace(seed=config.seed)
        focus = (config.cite if config.cite != "auto" else DEFAULT_CITE) == "focus"
        if settings.max_tokens is None:
            settings = settings.replace(max_tokens=FOCUS_MAX_TOKENS if focus else DEFAULT_MAX_TOKENS)
        self.settings = settings
        self.corpus = corpus if isinstance(corpus, Corpus) else load_corpus(corpus)
        if len(self.corpus) == 0:
            raise InputError("the corpus has no documents", source=str(self.corpus.source), field="corpus")
        self.client = LLMClient(settings)
        self.cache = settings.open_cache()
        self.price = price_for(self.client.model, self.client.endpoint, settings.price)
        from ragexam.questions.llm_checks import load_critic

        jsettings = settings.replace(model=judge_model or settings.model, temperature=0.0, max_tokens=None)
        self.progress = progress
        # cheap checks first: a bad mix, prompt file, retriever or budget fails before the corpus is analysed
        self.language = config.language if config.language != "auto" else \
            C.CorpusFacts.detect_language(self.corpus.documents)
        self.prompt_language = config.prompt_language if config.prompt_language != "auto" else DEFAULT_PROMPT_LANGUAGE
        self.cite = config.cite if config.cite != "auto" else DEFAULT_CITE
        #: questions asked for per call: one in the focus mode
        self.per_call = 1 if self.cite == "focus" else config.per_call
        self.checks = [k for k in CHECKS if k not in config.skip_checks]
        self.critic = load_critic(self.prompt_language)
        self.reader = load_reader(self.prompt_language)
        self.judge = Judge(settings=jsettings, max_attempts=config.max_attempts, language=self.language,
                           custom=[self.critic], scoring="sample")  # its checks read the written verdicts
        self.prompts: PromptSet = load_prompts(self.prompt_language, config.prompt, config.kinds)
        self.prompts.check(self.language, self.cite)
        self._retriever = self._parse_retriever()
        self.mix = parse_mix(config.mix, self.prompts.kinds)
        check_kinds(self.mix, len(self.corpus))
        self.targets = targets(self.mix, config.n)
        if config.budget is not None and self._price_pair() is None:
            raise InputError(f"--budget needs a price, and none is known for {self.client.model!r} at "
                             f"{self.client.endpoint}; pass --price IN,OUT (USD per 1M tokens)", source="--budget",
                             field="budget")
        try:
            self.signature()
        except ValueError as err:
            raise InputError(f"received {settings.model!r}: {err}", source="--model", field="model") from None
        self.facts = C.CorpusFacts.build(self.corpus.documents, self.language)
        self.corpus_text = self.facts.corpus_text
        self.contents = self.facts.contents
        self.script = self.facts.script
        self.foreign = self.facts.foreign
        self.sections = build_sections(self.corpus.documents, config.section_chars)
        if not self.sections:
            raise InputError("every document is blank; nothing to generate from", source=str(self.corpus.source))
        self.by_sid = {s.sid: s for s in self.sections}
        self.titles_by_doc = {d.doc_id: d.title or "" for d in self.corpus.documents}
        self.titles = self._titles()
        self._indexed = False
        self._pairs: Optional[Pairs] = None
        self._sentences: Dict[str, List[str]] = {}
        self.checker = Checker(self)

    # -- small helpers --------------------------------------------------------------------------------------
    def _price_pair(self) -> Optional[Tuple[float, float]]:
        return self.price if self.price is not None and self.judge.price is not None else None

    def _titles(self, limit: int = 60) -> List[str]:
        import numpy as np

        names = [d.title or d.doc_id for d in self.corpus.documents]
        names = list(dict.fromkeys(names))
        if len(names) > limit:
            idx = sorted(np.random.default_rng(self.config.seed).choice(len(names), limit, replace=False).tolist())
            names = [names[i] for i in idx]
        return names

    def _parse_retriever(self):
        """The ``--retriever`` (not indexed yet); an :class:`InputError` for a pipeline that searches its own
        index (``http:``, LangChain, LlamaIndex, results files), which cannot search the corpus's sections."""
        from ragexam.retrieval.spec import parse_retriever
        from ragexam.retrieval.texts import is_text_retriever

        r = parse_retriever(self.config.retriever, progress=False)
        if is_text_retriever(r) or not hasattr(r, "index"):
            raise InputError(f"received {self.config.retriever!r}, a pipeline that searches its own index; the "
                             "generator must index the corpus's sections to find related sections (multi questions) "
                             "and to search for out-of-corpus questions. Use a retriever ragexam indexes: bm25, "
                             "bm25:whitespace, dense, dense:st:MODEL, dense:openai:MODEL, hybrid:bm25+dense, or one "
                             "of these followed by >rerank:...", source="--retriever", field="retriever")
        return r

    @property
    def retriever(self):
        if not self._indexed:
            self._retriever.index([s.sid for s in self.sections], [s.text for s in self.sections])
            self._indexed = True
        return self._retriever

    def reader_feedback(self, kind: str, message: str) -> str:
        """The follow-up to an unusable reader reply."""
        from ragexam.questions.output import DECLINE

        return self.reader.feedback(message or kind, decline=DECLINE[self.language])

    def _numbered(self, secs: Sequence[Section]) -> Tuple[List[Any], Dict[int, str]]:
        """The passages of ``secs`` with numbered sentences (numbers run on), and number -> sentence."""
        from dataclasses import replace

        from ragexam.data.chunking import sentence_spans

        out, numbers = [], {}
        for sec in secs:
            if sec.sid not in self._sentences:
                self._sentences[sec.sid] = [sec.text[a:b] for a, b in sentence_spans(sec.text)]
            shown = []
            for text in self._sentences[sec.sid]:
                k = len(numbers) + 1
                numbers[k] = text
                shown.append((k, text))
            out.append(replace(sec.passage(), numbered=tuple(shown)))
        return out, numbers

    @property
    def pairs(self) -> Pairs:
        if self._pairs is None:
            self._pairs = Pairs(self.sections, self.retriever)
        return self._pairs

    def signature(self) -> str:
        """Every setting that shapes the set (never the key)."""
        from ragexam.data.normalization import normalization_signature
        from ragexam.signature import Signature

        c = self.config
        fa, cr, ac = (m.rubric(self.language) for m in (FAITHFULNESS, RELEVANCE, CORRECTNESS))
        critic = self.critic.rubric(self.prompt_language)
        mix = ",".join(f"{k}={self.mix[k]:.4g}" for k in self.mix)
        meaning = []
        if "critic" in self.checks:
            meaning.append(("critic", f"{critic.name}@{critic.sha}>=3"))
        if "reader" in self.checks:
            meaning += [("reader", self.reader.label), ("agree", f"contained,{ac.name}@{ac.sha}>={c.agree_at}")]
        return str(Signature([
            ("generate", self.client.model), ("endpoint", self.client.endpoint), ("prompt", self.prompts.label),
            ("temp", self.settings.temperature), ("max_tokens", self.settings.max_tokens), ("seed", c.seed),
            ("n", c.n), ("mix", mix), ("per_call", self.per_call), ("section", c.section_chars),
            ("cite", self.cite), ("checks", "+".join(self.checks) or "none"), ("judge", self.judge.model),
            *meaning,
            ("answer_check", f"contained+{fa.name}@{fa.sha}=1" if FAITHFULNESS.name in self.checks else "none"),
            ("ooc_check", f"{c.retriever}/top{c.ooc_top}/{cr.name}@{cr.sha}<={c.ooc_max_relevance}"),
            ("evidence", f"{c.min_evidence_chars}-{c.max_evidence_chars}"), ("ambiguous", c.ambiguous),
            ("overlap", "kiwi" if self.language == "ko" else "words"), ("lexical_at", c.lexical_at),
            ("dedup", f"bigram-jaccard>={c.dedup_at:g}"), ("copy", f"bigram-share>={c.copy_at:g}"),
            ("norm", normalization_signature().split(":", 1)[1]), ("attempts", c.max_attempts),
            ("format", self.client.response_format)]))

    # -- tasks -----------------------------------------------------------------------------------------------
    def _key(self, messages: List[Dict[str, str]], sample: int) -> str:
        from ragexam.llm.cache import request_key

        return request_key({"format": CALL_FORMAT, "kind": "questions", "model": self.client.model,
                            "endpoint": self.client.endpoint, "messages": messages,
                            "temperature": self.settings.temperature, "max_tokens": self.settings.max_tokens,
                            "seed": self.settings.seed, "prompt": self.prompts.sha, "sample": sample})

    def _plan_pass(self, state: "_State") -> List[_Task]:
        c = self.config
        counts = Counter(state.kept_types)
        calls: Dict[str, int] = {}
        for kind, target in self.targets.items():
            deficit = target - counts.get(kind, 0)
            if deficit <= 0:
                continue
            asked = state.asked.get(kind, 0)
            if asked >= GIVE_UP_AFTER and not state.kept_by_kind.get(kind):
                state.notes.add(f"no {kind} question kept of {asked} asked for: not asked for again (the set is "
                                "filled with the other types)")
                continue
            y = state.kept_by_kind.get(kind, 0) / asked if asked >= self.per_call else INITIAL_YIELD
            y = max(MIN_YIELD, min(1.0, y))
            calls[kind] = math.ceil(deficit / (self.per_call * y))
        cap = len(self.sections)
        total = sum(calls.values())
        if total > cap:  # one request per section in a pass: scale down, largest remainders
            share = {k: v * cap / total for k, v in calls.items()}
            calls = {k: int(math.floor(v)) for k, v in share.items()}
            for k in sorted(share, key=lambda k: -(share[k] - calls[k]))[:cap - sum(calls.values())]:
                calls[k] += 1
            calls = {k: max(1, v) for k, v in calls.items()}
        order: List[str] = []
        left = dict(calls)
        while any(left.values()):
            for k in self.mix:
                if left.get(k):
                    order.append(k)
                    left[k] -= 1
        tasks: List[_Task] = []
        taken: Set[str] = set()
        for kind in order:
            focus = self.cite == "focus" and kind != "out_of_corpus"
            sec = state.coverage.take(taken, lambda s, k=kind, f=focus: (s.sid, k) in state.exhausted or
                                      (f and not self._focus_left(s, state)))
            if sec is None:
                continue
            taken.add(sec.sid)
            if focus:
                task = self._focus_task(kind, sec, state, len(state.tasks) + len(tasks))
                if task is not None:
                    tasks.append(task)
                continue
            secs: Tuple[Section, ...] = (sec,)
            if kind == "multi":
                other = self.pairs.partner(sec)
                if other is None:
                    state.notes.add(f"section {sec.sid} has no unused related section of another document")
                    continue
                secs = (sec, other)
            request = state.coverage.uses[sec.sid]
            avoid = state.proposed.get(sec.sid, [])[-AVOID_MAX:]
            numbers: Dict[int, str] = {}
            if self.cite == "sentences" and kind != "out_of_corpus":
                passages, numbers = self._numbered(secs)
            else:
                passages = [s.passage() for s in secs]
            messages = self.prompts.messages(kind, passages, self.per_call,
                                             titles=self.titles if kind == "out_of_corpus" else (),
                                             avoid=avoid, request=request, language=self.language,
                                             cite="spans" if self.cite == "focus" else self.cite)
            tasks.append(_Task(len(state.tasks) + len(tasks), state.pass_no, kind, secs, request, messages,
                               numbers=numbers))
        for t in tasks:
            ident = repr(t.messages)
            sample = state.samples[ident]
            state.samples[ident] += 1
            t.key = self._key(t.messages, sample)
        return tasks

    # -- the focus mode: ragexam chooses the sentences -------------------------------------------------------
    def _section_sentences(self, sec: Section) -> List[str]:
        from ragexam.data.chunking import sentence_spans

        if sec.sid not in self._sentences:
            self._sentences[sec.sid] = [sec.text[a:b] for a, b in sentence_spans(sec.text)]
        return self._sentences[sec.sid]

    def _focus_candidates(self, sec: Section, state: "_State") -> List[int]:
        """The sentences of ``sec`` a focus question may still be about, in the section's seeded order: not asked
        about yet, of an evidence's length (``min_evidence_chars``-``max_evidence_chars`` characters), and not
        leaning on their neighbours (:data:`_LEANS`: a question written from "위 방법으로 해결되지 않으면 …" or
        "자주 보이는 오류는 다음과 같습니다." cannot stand on its own)."""
        import random

        c = self.config
        texts = self._section_sentences(sec)
        order = list(range(len(texts)))
        random.Random(f"{c.seed}:{sec.sid}").shuffle(order)
        return [i for i in order if (sec.sid, i) not in state.focus_used
                and c.min_evidence_chars <= len(" ".join(texts[i].split())) <= c.max_evidence_chars
                and not _LEANS.search(" ".join(texts[i].split()))]

    def _focus_left(self, sec: Section, state: "_State") -> bool:
        return bool(self._focus_candidates(sec, state))

    def _focus_task(self, kind: str, sec: Section, state: "_State", index: int) -> Optional[_Task]:
        """One ``--cite focus`` call: the next sentence of ``sec`` (for ``lexical``, the next that holds a code,
        name, number or quotation, when one is left); for ``multi`` the pair of a sentence of ``sec`` and one of
        the related section of another document that shares the most terms (``None`` when none shares
        :data:`MULTI_SHARED_TERMS`: two unrelated sentences make no two-document question)."""
        free = self._focus_candidates(sec, state)
        texts = self._section_sentences(sec)
        pick = free[0]
        if kind == "lexical":
            pick = next((i for i in free if _ANCHORED.search(texts[i])), pick)
        chosen: List[Tuple[Section, int]] = [(sec, pick)]
        if kind == "multi":
            other = self.pairs.partner(sec)
            if other is None or not self._focus_left(other, state):
                state.notes.add(f"section {sec.sid} has no unused related section of another document")
                return None
            theirs = self._focus_candidates(other, state)
            terms = M.terms([texts[i] for i in free] + [self._section_sentences(other)[j] for j in theirs],
                            self.language)
            mine, shared = terms[:len(free)], terms[len(free):]
            best = max(((len(mine[a] & shared[b]), -a, -b) for a in range(len(free)) for b in range(len(theirs))))
            if best[0] < MULTI_SHARED_TERMS:
                state.notes.add(f"no sentence of section {sec.sid} shares {MULTI_SHARED_TERMS} terms with one of "
                                f"{other.sid}")
                state.exhausted.add((sec.sid, kind))
                return None
            pick = free[-best[1]]
            chosen = [(sec, pick), (other, theirs[-best[2]])]
        for s_, i in chosen:
            state.focus_used.add((s_.sid, i))
        sentences = [self._section_sentences(s_)[i] for s_, i in chosen]
        documents = [self.titles_by_doc.get(s_.doc_id) or s_.doc_id for s_, _ in chosen]
        messages = self.prompts.focus_messages(kind, documents, sentences, language=self.language)
        secs = tuple(dict.fromkeys(s_ for s_, _ in chosen))
        return _Task(index, state.pass_no, kind, secs, state.coverage.uses[sec.sid], messages,
                     numbers={k: t for k, t in enumerate(sentences, 1)}, focus=True)

    # -- one generation call ---------------------------------------------------------------------------------
    def _call(self, task: _Task):
        """One generation call: up to ``max_attempts`` replies (:func:`ragexam.llm.attempts.ask`)."""
        from ragexam.questions.prompts import FOCUS_SCHEMA
        from ragexam.questions.replies import ReplyError, parse_focus_reply, parse_reply
        from ragexam.llm.attempts import TEXT_REFUSAL, ask
        from ragexam.llm.batch import Outcome

        if task.focus:
            parse, schema = parse_focus_reply, FOCUS_SCHEMA
        else:
            parse, schema = parse_reply, reply_schema(list(task.numbers) if task.numbers else None)
        got = ask(self.client, task.messages, parse, bad_reply=(ReplyError,), refusal=TEXT_REFUSAL,
                  feedback=lambda which, error="": self.prompts.feedback(which, error, cite=self.cite),
                  max_attempts=self.config.max_attempts,
                  max_tokens=int(self.settings.max_tokens), temperature=self.settings.temperature,
                  seed=self.settings.seed, schema=schema, schema_name="questions")
        value: Dict[str, Any] = {"attempts": got.attempts, "requests": got.requests, "errors": got.errors,
                                 "prompt_tokens": got.prompt_tokens, "completion_tokens": got.completion_tokens}
        if got.failed is not None:
            value.update(status="failed", reason=got.failed.kind, message=got.failed.message)
        elif got.parsed:
            value.update(status="ok", items=got.value)
        else:
            value.update(status="invalid", reason=got.reason,
                         message=f"{got.message} (after {fmt.plural(got.attempts, 'attempt')})", reply=got.last[:2000])
        return Outcome(value, store=got.failed is None, requests=got.requests, replies=got.attempts,
                       prompt_tokens=got.prompt_tokens, completion_tokens=got.completion_tokens)

    # -- running ---------------------------------------------------------------------------------------------
    def run(self) -> GenerateResult:
        """Generate the set (see the module docstring)."""
        state = _State(Coverage(self.sections, self.config.seed), initial_check_rate=self.checker.initial_rate())
        self._loop(state, dry=False)
        return self._result(state)

    def plan(self) -> GeneratePlan:
        """The dry run: passes whose calls are all cached are replayed (no request is sent); the first pass
        that would call the endpoint is counted -- its generation calls exactly, its LLM checks exactly when
        the generation replies are cached, else as an upper bound (``per_call`` per call) -- with estimated
        tokens and cost.  Nothing is sent, claimed or written."""
        state = _State(Coverage(self.sections, self.config.seed), initial_check_rate=self.checker.initial_rate())
        try:
            self._loop(state, dry=True)
        except _Stop as stop:
            return self._plan_result(state, stop.plan)
        return self._plan_result(state, None)

    def _plan_result(self, state: "_State", plan: Optional[Dict[str, Any]]) -> GeneratePlan:
        from ragexam.llm.cost import cost_usd

        kept = len(state.kept)
        if plan is None:
            note = ("every call is cached: a run writes the set without calling the endpoint" if state.pass_no
                    else "nothing to do")
            return GeneratePlan(self.client.model, self.client.endpoint, self.judge.model, self.language,
                                self.config.n, dict(self.targets), state.pass_no, kept, None, 0, 0, 0, True, 0, 0,
                                0.0 if self._price_pair() else "unknown", note)
        price = self._price_pair()
        cost: Union[float, str] = "unknown"
        if price is not None:
            cost = cost_usd(plan["prompt_tokens"], plan["completion_tokens"], price)
        deficit = self.config.n - kept
        note = (f"pass {plan['pass']} is the first that calls the endpoint; {kept} questions are kept from cached "
                f"passes, {deficit} are still needed. Later passes depend on how many candidates pass the checks "
                f"(expect about {math.ceil(deficit / (self.per_call * INITIAL_YIELD))} generation calls in "
                f"all, plus about {self.checker.initial_rate():g} LLM check calls per candidate: "
                f"{', '.join(k for k in self.checks if k in LLM_CHECKS) or 'none'}; out-of-corpus candidates one "
                f"{RELEVANCE.name} call).")
        return GeneratePlan(self.client.model, self.client.endpoint, self.judge.model, self.language, self.config.n,
                            dict(self.targets), plan["pass"] - 1, kept, plan["pass"], plan["calls"], plan["cached"],
                            plan["checks"], plan["checks_exact"], plan["prompt_tokens"], plan["completion_tokens"],
                            cost, note)

    def _loop(self, state: "_State", *, dry: bool) -> None:
        c = self.config
        while True:
            counts = Counter(state.kept_types)
            if all(counts.get(k, 0) >= t for k, t in self.targets.items()):
                state.stop = "targets met"
                return
            if state.pass_no >= c.max_passes:
                state.stop = f"max_passes ({c.max_passes}) reached"
                return
            state.pass_no += 1
            tasks = self._plan_pass(state)
            if not tasks:
                state.stop = "no section left to ask about"
                return
            tasks = self._fit(tasks, state, dry)
            if not tasks:
                state.stop = state.stop or "spending limit reached"
                return
            values = self._generate(tasks, state, dry)
            before = len(state.kept)
            cands = self._candidates(tasks, values, state)
            self._verify(cands, state, dry)
            state.tasks.extend(tasks)
            if len(state.kept) == before:
                state.stop = state.stop or f"pass {state.pass_no} kept no question"  # a spending limit says more
                return

    def _fit(self, tasks: List[_Task], state: "_State", dry: bool) -> List[_Task]:
        """Tasks that fit ``max_calls``/``budget``: cached tasks are free; an uncached call is planned when it
        and its expected LLM checks (``per_call`` x the share of candidates that needed one so far, 0.5 before
        any is known) fit -- the first uncached call of a pass only needs room for itself.  Checks that no
        longer fit are not made (``not_checked``), so the limits are never exceeded."""
        c = self.config
        if c.max_calls is None and c.budget is None:
            return tasks
        if dry:
            return tasks
        from ragexam.llm.cost import cost_usd, estimate_tokens

        hits = self.cache.get_many(t.key for t in tasks) if self.cache is not None else {}
        out: List[_Task] = []
        calls = state.calls_made
        spent = state.spent_usd
        price = self._price_pair()
        check_share = state.check_share()
        for t in tasks:
            if t.key in hits:
                out.append(t)
                continue
            need_calls = 1 + self.per_call * check_share
            est = 0.0
            if price is not None:
                p = estimate_tokens("".join(m["content"] for m in t.messages))
                est = cost_usd(p, TOKENS_PER_QUESTION * self.per_call, price) * (1 + check_share)
            first = not any(x.key not in hits for x in out)  # the pass's first call only needs room for itself
            if c.max_calls is not None and (calls + (1 if first else need_calls) > c.max_calls + 1e-9):
                state.stop = f"max_calls ({c.max_calls}) reached"
                break
            if c.budget is not None and spent + (est / (1 + check_share) if first else est) > c.budget + 1e-12:
                state.stop = f"budget (${c.budget:g}) reached"
                break
            calls += need_calls
            spent += est
            out.append(t)
        if len(out) < len(tasks):
            state.notes.add(f"pass {state.pass_no}: {len(tasks) - len(out)} of {len(tasks)} planned calls left out "
                            f"({state.stop})")
        return out

    def _generate(self, tasks: List[_Task], state: "_State", dry: bool) -> Dict[str, Dict[str, Any]]:
        from ragexam.llm.batch import run_calls
        from ragexam.llm.cost import estimate_tokens

        def usable(v: Dict[str, Any]) -> bool:
            return v.get("status") in ("ok", "invalid")

        if dry:
            hits = self.cache.get_many(t.key for t in tasks) if self.cache is not None else {}
            hits = {k: v for k, v in hits.items() if usable(v)}
            missing = [t for t in tasks if t.key not in hits]
            if missing:
                distinct = list({t.key: t for t in missing}.values())
                prompt = sum(estimate_tokens("".join(m["content"] for m in t.messages)) for t in distinct)
                completion = TOKENS_PER_QUESTION * self.per_call * len(distinct)
                checks = math.ceil(self.per_call * len(tasks) * state.check_share())
                jp, jc = self._judge_estimate(checks)
                raise _Stop({"pass": state.pass_no, "calls": len(distinct), "cached": len(tasks) - len(missing),
                             "checks": checks, "checks_exact": False, "prompt_tokens": prompt + jp,
                             "completion_tokens": completion + jc})
            return hits

        def progress(done: int, total: int) -> None:
            if self.progress is not None:
                self.progress(f"pass {state.pass_no}: questions", done, total)

        batch = run_calls(((t.key, t) for t in tasks), self._call, cache=self.cache, kind="questions",
                          model=self.client.model, endpoint=self.client.endpoint,
                          concurrency=self.settings.concurrency, usable=usable, redact=self.client.redact_value,
                          progress=progress, claim_wait=self.settings.claim_wait_seconds)
        state.add_usage("generation", batch.usage.to_dict(self.price))
        return batch.values

    def _judge_estimate(self, n_checks: int) -> Tuple[int, int]:
        from ragexam.llm.cost import estimate_tokens
        fa, cr = FAITHFULNESS.rubric(self.language), RELEVANCE.rubric(self.language)
        per_fa = estimate_tokens(fa.system + fa.template) + 100
        per_cr = estimate_tokens(cr.system + cr.template) + math.ceil(self.config.ooc_top *
                                                                      self.config.section_chars / 3)
        ooc = self.mix.get("out_of_corpus", 0.0)
        per = per_cr * ooc + per_fa * (1 - ooc)
        comp = self.judge.metric(RELEVANCE).allowance_for(self.config.ooc_top) * ooc + \
            self.judge.metric(FAITHFULNESS).allowance_for(2) * (1 - ooc)
        return math.ceil(per * n_checks), math.ceil(comp * n_checks)

    # -- candidates and checks -------------------------------------------------------------------------------
    def _candidates(self, tasks: List[_Task], values: Mapping[str, Dict[str, Any]], state: "_State") -> List[Candidate]:
        from ragexam.questions.replies import item_fields

        out: List[Candidate] = []
        for t in tasks:
            v = values[t.key]
            sids = tuple(s.sid for s in t.sections)
            docs = tuple(dict.fromkeys(s.doc_id for s in t.sections))
            base = {"kind": t.kind, "pass": t.pass_no, "call": t.key[:16], "sections": list(sids),
                    "seq": [t.pass_no, t.index, 0]}
            status = v.get("status")
            if status != "ok":
                reason = "call_failed" if status == "failed" else "malformed_reply"
                detail = f"{v.get('reason')}: {v.get('message')}"
                state.reject_call(dict(base, reason=reason, stage=C.REASONS[reason][0], detail=detail,
                                       errors=v.get("errors", []), reply=v.get("reply")))
                continue
            items = v.get("items") or []
            state.asked[t.kind] = state.asked.get(t.kind, 0) + self.per_call
            if not items:
                state.exhausted.add((sids[0], t.kind))
                state.reject_call(dict(base, reason="no_questions", stage="reply",
                                       detail=f"the model wrote no {t.kind} question from {', '.join(sids)}"))
                continue
            for j, raw in enumerate(items, 1):
                cand = Candidate(f"p{t.pass_no}-c{t.index + 1:04d}-{j}", (t.pass_no, t.index, j), t.kind, t.pass_no,
                                 t.key[:16], sids, docs, raw)
                given = raw
                if t.focus and isinstance(raw, dict):  # the evidence is the focus sentences, whatever the model says
                    given = dict(raw, evidence=list(t.numbers))
                fields, problem = item_fields(given, t.numbers or None)
                if fields is not None:
                    cand.question = fields["question"].strip()
                    cand.answer = fields["answer"].strip()
                    cand.evidence = fields["evidence"]
                    cand.cited = fields.get("cited", [])
                    cand.model_type = fields["model_type"]
                    if cand.question:
                        state.proposed.setdefault(sids[0], []).append(" ".join(cand.question.split()))
                if j > self.per_call:
                    cand.rejection = C.Rejection("over_count", f"item {j} of a reply asked for {self.per_call}")
                elif fields is None:
                    cand.rejection = C.Rejection("malformed_item", problem or "malformed")
                out.append(cand)
        return out

    def _verify(self, cands: List[Candidate], state: "_State", dry: bool) -> None:
        c = self.config
        live = [x for x in cands if x.rejection is None]
        for x in live:
            x.rejection = C.question_problem(x.question, script=self.script, foreign=self.foreign,
                                             scripts=self.facts.scripts,
                                             injection="injection" in self.checks)
        live = [x for x in live if x.rejection is None]
        if "guards" in self.checks and live:
            for x, why in zip(live, M.not_questions([x.question for x in live], self.language)):
                if why:
                    x.rejection = C.Rejection("not_a_question", f"{x.question!r} is a {why}" + (
                        " (no question mark, no predicate)" if why == "noun phrase" else
                        " (its last ending is declarative, -ㅂ니다/-습니다)"))
            live = [x for x in live if x.rejection is None]
        answerable = [x for x in live if x.answerable]
        self._check_evidence(answerable)
        for x in (x for x in live if not x.answerable):
            self._check_ooc_evidence(x)
        # duplicates against kept questions and earlier candidates of this pass, in order
        for x in cands:
            if x.rejection is not None:
                continue
            x.grams = M.bigrams(x.question)
            x.rejection = C.find_duplicate(x.grams, state.kept_grams, c.dedup_at)
            if x.rejection is None:
                state.kept_grams.append((x.cid, x.grams))
        live = [x for x in cands if x.rejection is None]
        try:
            self.checker.run(live, state, dry)
        except StopDry as stop:
            raise _Stop({"pass": state.pass_no, "calls": 0, "cached": 0, "checks": stop.calls,
                         "checks_exact": stop.exact, "prompt_tokens": stop.prompt_tokens,
                         "completion_tokens": stop.completion_tokens}) from None
        for x in cands:
            if x.rejection is None:
                state.keep(x)
            else:
                state.reject(x)
        failed = {x.cid for x in live if x.rejection is not None}  # provisional entries the LLM checks refused
        if failed:
            state.kept_grams = [(cid, g) for cid, g in state.kept_grams if cid not in failed]

    def _check_evidence(self, cands: Sequence[Candidate]) -> None:
        c = self.config
        pending: List[Candidate] = []
        for x in cands:
            texts = [self.by_sid[s].text for s in x.sections]
            located, problem = C.locate_evidence(x.evidence, shown_docs=x.doc_ids, shown_texts=texts,
                                                 corpus_text=self.corpus_text, contents=self.contents,
                                                 min_chars=c.min_evidence_chars, max_chars=c.max_evidence_chars,
                                                 ambiguous=c.ambiguous)
            if problem is None:
                problem = C.answer_problem(x.answer)
            if problem is None:
                spans = C.spans_by_doc(located)
                sentences = "\n".join(M.scope_texts(self.contents[d], s, "sentence") for d, s in spans.items())
                problem = C.copy_problem(x.question, sentences, located, c.copy_at)
            if problem is not None:
                x.rejection = problem
                continue
            x.located = located
            x.relevant = C.evidence_doc_ids(located, join=c.ambiguous == "join")
            pending.append(x)
        if not pending:
            return
        measured = M.measure_many([x.question for x in pending],
                                   [" ".join(loc.normalized for loc in x.located) for x in pending],
                                   [self._paragraphs(x.located) for x in pending], language=self.language,
                                   latin_is_foreign=self.script != "latin", lexical_at=c.lexical_at)
        unshared = [x for x, (ov, _, _) in zip(pending, measured) if ov == 0] if "guards" in self.checks else []
        off = {x.cid for x in unshared if self._off_topic(x)}
        for x, (ov, anchors, style) in zip(pending, measured):
            if x.cid in off:
                continue
            x.overlap, x.anchors, x.style = ov, anchors, style
            multi = M.needs_two_documents([loc.doc_ids + loc.other_doc_ids for loc in x.located])
            x.type = M.type_of(multi, x.kind, style)
            if "guards" in self.checks:
                # the focus mode imposes the evidence (two sentences for multi): the question must use each of them
                x.rejection = (C.unrelated_evidence(x.question, x.answer, x.located, self.language)
                               if self.cite == "focus" else None) or \
                    C.polarity_problem(x.question, x.answer, x.located, self.language) or \
                    C.answer_type_problem(x.question, x.answer, x.located)
                if x.rejection is not None:
                    continue
            if "premise" in self.checks:
                x.rejection = C.premise_problem(x.question, x.answer, x.located, self.language)
                if x.rejection is not None:
                    continue
            if C.answer_contained(x.answer, x.located):
                x.answer_check = {"method": "contained"}
            elif "guards" in self.checks:
                x.rejection = C.affirmation_problem(x.question, x.answer, x.located, self.language)

    def _off_topic(self, x: Candidate) -> bool:
        """Sets ``off_topic`` when the question (which shares no term with its evidence) shares none with the
        paragraphs around its evidence or the titles of its documents either."""
        context = self._paragraphs(x.located) + "\n" + "\n".join(
            dict.fromkeys(self.titles_by_doc.get(d, "") for d in x.relevant))
        q, ctx = M.terms([x.question, context], self.language)
        x.rejection = C.topic_problem(q, ctx, context)
        return x.rejection is not None

    def _paragraphs(self, located: Sequence[C.Located]) -> str:
        spans = C.spans_by_doc(located)
        return "\n".join(M.scope_texts(self.contents[d], s, "paragraph") for d, s in spans.items())

    def _check_ooc_evidence(self, x: Candidate) -> None:
        found = []
        for i, e in enumerate(x.evidence, 1):
            docs = self.corpus_text.docs_containing(e) if e.strip() else []
            if docs:
                found.append((i, docs))
        if found:
            i, docs = found[0]
            x.rejection = C.Rejection("answered_in_corpus", f"its evidence {i} occurs in {', '.join(docs[:5])}")
            return
        x.type = "out_of_corpus"

    # -- the result ------------------------------------------------------------------------------------------
    def _result(self, state: "_State") -> GenerateResult:
        from ragexam.questions.output import build_card, candidate_record, reject_record

        chosen, surplus = self._select(state.kept)
        records = []
        for i, x in enumerate(chosen, 1):
            records.append(candidate_record(self, x, f"{self.config.id_prefix}_{i:04d}"))
        for x in surplus:
            x.rejection = C.Rejection("surplus", f"type {x.type} already has its target, and the set is full")
            state.rejected.append(x)
        rejects = list(state.call_rejects) + [reject_record(x) for x in state.rejected]
        rejects.sort(key=lambda r: (r["reason"] == "surplus", r["seq"]))
        card = build_card(self, state, records, rejects)
        return GenerateResult(records, rejects, card, self.signature(), self.language, self.corpus.source)

    def _select(self, kept: List[Candidate]) -> Tuple[List[Candidate], List[Candidate]]:
        n = self.config.n
        taken: Dict[str, int] = Counter()
        chosen: List[Candidate] = []
        extra: List[Candidate] = []
        for x in kept:
            t = x.type or "?"
            if taken[t] < self.targets.get(t, 0):
                taken[t] += 1
                chosen.append(x)
            else:
                extra.append(x)
        room = n - len(chosen)
        fill = extra[:max(0, room)]
        surplus = extra[max(0, room):]
        keep_ids = {x.cid for x in chosen + fill}
        ordered = [x for x in kept if x.cid in keep_ids]
        return ordered, surplus


@dataclass
class _State:
    """What a generation knows between passes."""

    coverage: Coverage
    pass_no: int = 0
    tasks: List[_Task] = field(default_factory=list)
    kept: List[Candidate] = field(default_factory=list)
    rejected: List[Candidate] = field(default_factory=list)
    call_rejects: List[Dict[str, Any]] = field(default_factory=list)
    kept_grams: List[Tuple[str, FrozenSet[str]]] = field(default_factory=list)
    proposed: Dict[str, List[str]] = field(default_factory=dict)
    asked: Dict[str, int] = field(default_factory=dict)
    kept_by_kind: Dict[str, int] = field(default_factory=dict)
    samples: Counter = field(default_factory=Counter)
    usage: Dict[str, Dict[str, Any]] = field(default_factory=dict)
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
        return float(sum(u.get("calls", 0) for u in self.usage.values()))

    @property
    def spent_usd(self) -> float:
        return float(sum(u["cost_usd"] for u in self.usage.values() if isinstance(u.get("cost_usd"), (int, float))))

    def check_share(self) -> float:
        """LLM check calls made per candidate so far (:attr:`initial_check_rate` before any is known)."""
        if not self.candidates_seen:
            return self.initial_check_rate
        return float(self.usage.get("checks", {}).get("calls", 0)) / self.candidates_seen

    def add_usage(self, what: str, usage: Mapping[str, Any]) -> None:
        cur = self.usage.setdefault(what, {})
        for k, v in usage.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                cur[k] = cur.get(k, 0) + v
            elif k not in cur:
                cur[k] = v

    def keep(self, x: Candidate) -> None:
        self.kept.append(x)
        if x.type == x.kind:
            self.kept_by_kind[x.kind] = self.kept_by_kind.get(x.kind, 0) + 1
        self._seen(x)

    def reject(self, x: Candidate) -> None:
        self.rejected.append(x)
        self._seen(x)

    def _seen(self, x: Candidate) -> None:
        self.candidates_seen += 1

    def reject_call(self, record: Dict[str, Any]) -> None:
        self.call_rejects.append(record)
