"""The *prepare* stage: everything a generation holds from start to end, checked before any call.

:func:`prepare` turns a corpus, a :class:`~ragexam.questions.config.GenerateConfig` and the generator's
:class:`~ragexam.llm.settings.LLMSettings` into a :class:`Setup`: the LLM client and cache, the judge of the LLM
checks (the generator's model unless ``judge_model`` names another: :attr:`Setup.checked_by_generator`), the
languages, the prompts, the mix and its targets, the corpus's facts and sections.  Cheap checks come first, so a bad
mix, prompt file, retriever or budget fails before the corpus is analysed.  A :class:`Setup` is read by every stage
(:mod:`.stages`); what changes while the set is made lives in the :class:`~ragexam.questions.products.Ledger`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple, Union

from ragexam.data.schema import Corpus
from ragexam.errors import InputError
from ragexam.llm.cache import LLMCache
from ragexam.llm.client import LLMClient
from ragexam.llm.settings import LLMSettings
from ragexam.metrics.judge import Judge, JudgeMetric
from ragexam.metrics.judge.builtin.answer_correctness import METRIC as CORRECTNESS
from ragexam.metrics.judge.builtin.context_relevance import METRIC as RELEVANCE
from ragexam.metrics.judge.builtin.faithfulness import METRIC as FAITHFULNESS
from ragexam.questions import checks as C
from ragexam.questions.config import CHECKS, DEFAULT_MAX_TOKENS, FOCUS_MAX_TOKENS, GenerateConfig
from ragexam.questions.prompts import PromptSet, ReaderPrompt, load_critic, load_prompts, load_reader
from ragexam.questions.sampling import DEFAULT_MIX, Pairs, Section, build_sections, check_kinds, parse_mix, targets
from ragexam.retrieval.base import Retriever

__all__ = ["Setup", "prepare", "Progress", "CorpusLike", "default_mix"]

#: called as ``progress(label, done, total)`` while calls run
Progress = Callable[[str, int, int], None]
#: a corpus as :func:`prepare` takes it: a loaded :class:`~ragexam.data.schema.Corpus`, a file or a bundled name
CorpusLike = Union[Corpus, str, Path]


@dataclass
class Setup:
    """What every stage of one generation reads (see the module docstring)."""

    config: GenerateConfig
    settings: LLMSettings
    corpus: Corpus
    client: LLMClient
    cache: Optional[LLMCache]
    price: Optional[Tuple[float, float]]
    judge: Judge
    language: str
    prompt_language: str
    cite: str
    #: questions asked for per call: one in the focus mode
    per_call: int
    #: the checks that run (:data:`~ragexam.questions.config.CHECKS` less ``skip_checks``)
    checks: List[str]
    critic: JudgeMetric
    reader: ReaderPrompt
    prompts: PromptSet
    mix: Dict[str, float]
    targets: Dict[str, int]
    sections: List[Section]
    titles_by_doc: Dict[str, str]
    #: document titles shown to an out-of-corpus call (at most 60, seeded)
    titles: List[str]
    progress: Optional[Progress] = None
    #: notes for the card decided before the first call (the default mix without ``multi``, ...)
    notes: List[str] = field(default_factory=list)
    _facts: Optional[C.CorpusFacts] = field(default=None, repr=False)
    _retriever: Optional[Retriever] = field(default=None, repr=False)
    _indexed: bool = field(default=False, repr=False)
    _pairs: Optional[Pairs] = field(default=None, repr=False)
    _sentences: Dict[str, List[str]] = field(default_factory=dict, repr=False)

    @property
    def facts(self) -> C.CorpusFacts:
        """What the checks know of the corpus (:class:`~ragexam.questions.checks.CorpusFacts`), built once."""
        if self._facts is None:
            self._facts = C.CorpusFacts.build(self.corpus.documents, self.language)
        return self._facts

    @cached_property
    def by_sid(self) -> Dict[str, Section]:
        return {s.sid: s for s in self.sections}

    @property
    def checked_by_generator(self) -> bool:
        """Whether the LLM checks are made by the generator's own model."""
        return self.judge.model == self.client.model

    @property
    def checked_by(self) -> str:
        """Who made the LLM checks, in words: "the generator itself: MODEL" or the judge model's name."""
        return f"the generator itself: {self.judge.model}" if self.checked_by_generator else self.judge.model

    def price_pair(self) -> Optional[Tuple[float, float]]:
        """The generator's price when the judge's is known too (else a cost cannot be estimated)."""
        return self.price if self.price is not None and self.judge.price is not None else None

    @property
    def retriever(self) -> Retriever:
        """The ``--retriever`` over the corpus's sections (indexed on first use)."""
        assert self._retriever is not None  # set by prepare (internal invariant)
        if not self._indexed:
            self._retriever.index([s.sid for s in self.sections], [s.text for s in self.sections])
            self._indexed = True
        return self._retriever

    @property
    def pairs(self) -> Pairs:
        if self._pairs is None:
            self._pairs = Pairs(self.sections, self.retriever)
        return self._pairs

    def sentences(self, sec: Section) -> List[str]:
        """The sentences of ``sec`` (:func:`ragexam.data.chunking.sentence_spans`), cut once."""
        from ragexam.data.chunking import sentence_spans

        if sec.sid not in self._sentences:
            self._sentences[sec.sid] = [sec.text[a:b] for a, b in sentence_spans(sec.text)]
        return self._sentences[sec.sid]

    def reader_feedback(self, kind: str, message: str) -> str:
        """The follow-up to an unusable reader reply."""
        from ragexam.questions.prompts import DECLINE

        return self.reader.feedback(message or kind, decline=DECLINE[self.language])

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


def default_mix(config: GenerateConfig, known: List[str], model: str,
                checked_by_generator: bool) -> Tuple[Dict[str, float], List[str]]:
    """The mix of ``config`` (:func:`~ragexam.questions.sampling.parse_mix`), and notes about it for the card.  With
    no mix given and the generator checking itself, the default mix without ``multi``: the local 1.5B model's
    two-document questions were junk as read (docs/generate.md, "Cheap guards"), and a model that checks its own
    questions is no second opinion on them."""
    if config.mix is not None or not checked_by_generator:
        return parse_mix(config.mix, known), []
    mix = {k: w for k, w in DEFAULT_MIX.items() if k != "multi"}
    return parse_mix(mix, known), [f"multi left out of the default mix: the checks are made by the generator itself "
                                   f"({model}), and a small model's two-document questions were mostly junk as read; "
                                   "ask for them with --mix, or check with another model (--judge-model)"]


def prepare(corpus: CorpusLike, config: GenerateConfig, settings: LLMSettings, *, judge_model: Optional[str] = None,
            progress: Optional[Progress] = None) -> Setup:
    """The :class:`Setup` of a generation (see the module docstring).

    :raises InputError: an empty corpus, a bad mix, prompt file, retriever, budget without a price, or a model
        name that cannot go into a signature.
    """
    from ragexam.data.loaders import load_corpus
    from ragexam.llm.cost import price_for

    if config.seed != settings.seed:
        settings = settings.replace(seed=config.seed)
    if settings.max_tokens is None:
        settings = settings.replace(max_tokens=FOCUS_MAX_TOKENS if config.cite_mode == "focus" else DEFAULT_MAX_TOKENS)
    corpus = corpus if isinstance(corpus, Corpus) else load_corpus(corpus)
    if len(corpus) == 0:
        raise InputError("the corpus has no documents", source=str(corpus.source), field="corpus")
    client = LLMClient(settings)
    cache = settings.open_cache()
    price = price_for(client.model, client.endpoint, settings.price)
    jsettings = settings.replace(model=judge_model or settings.model, temperature=0.0, max_tokens=None)
    # cheap checks first: a bad mix, prompt file, retriever or budget fails before the corpus is analysed
    language = config.language if config.language != "auto" else C.CorpusFacts.detect_language(corpus.documents)
    prompt_language = config.instruction_language
    critic = load_critic(prompt_language)
    judge = Judge(settings=jsettings, max_attempts=config.max_attempts, language=language, custom=[critic],
                  scoring="sample")  # its checks read the written verdicts
    prompts = load_prompts(prompt_language, config.prompt, config.kinds)
    prompts.check(language, config.cite_mode)
    retriever = _parse_retriever(config.retriever)
    mix, notes = default_mix(config, prompts.kinds, settings.model, jsettings.model == settings.model)
    check_kinds(mix, len(corpus))
    sections = build_sections(corpus.documents, config.section_chars)
    setup = Setup(config, settings, corpus, client, cache, price, judge, language, prompt_language, config.cite_mode,
                  1 if config.cite_mode == "focus" else config.per_call,
                  [k for k in CHECKS if k not in config.skip_checks], critic, load_reader(prompt_language), prompts,
                  mix, targets(mix, config.n), sections, {d.doc_id: d.title or "" for d in corpus.documents},
                  _titles(corpus, config.seed), progress=progress, notes=notes, _retriever=retriever)
    if config.budget is not None and setup.price_pair() is None:
        raise InputError(f"--budget needs a price, and none is known for {client.model!r} at {client.endpoint}; pass "
                         "--price IN,OUT (USD per 1M tokens)", source="--budget", field="budget")
    try:
        setup.signature()
    except ValueError as err:
        raise InputError(f"received {settings.model!r}: {err}", source="--model", field="model") from None
    if not sections:
        raise InputError("every document is blank; nothing to generate from", source=str(corpus.source))
    setup.facts  # the corpus is analysed before the first call (Kiwi, the scripts, the evidence locator)
    return setup


def _titles(corpus: Corpus, seed: int, limit: int = 60) -> List[str]:
    import numpy as np

    names = list(dict.fromkeys(d.title or d.doc_id for d in corpus.documents))
    if len(names) > limit:
        idx = sorted(np.random.default_rng(seed).choice(len(names), limit, replace=False).tolist())
        names = [names[i] for i in idx]
    return names


def _parse_retriever(spec: str) -> Retriever:
    """The ``--retriever`` (not indexed yet); an :class:`InputError` for a pipeline that searches its own index
    (``http:``, LangChain, LlamaIndex, results files), which cannot search the corpus's sections."""
    from ragexam.retrieval.spec import parse_retriever
    from ragexam.retrieval.texts import is_text_retriever

    r = parse_retriever(spec, progress=False)
    if is_text_retriever(r) or not hasattr(r, "index"):
        raise InputError(f"received {spec!r}, a pipeline that searches its own index; the generator must index the "
                         "corpus's sections to find related sections (multi questions) and to search for "
                         "out-of-corpus questions. Use a retriever ragexam indexes: bm25, bm25:whitespace, dense, "
                         "dense:st:MODEL, dense:openai:MODEL, hybrid:bm25+dense, or one of these followed by "
                         ">rerank:...", source="--retriever", field="retriever")
    return r
