"""The settings of a generation: :class:`GenerateConfig` (validated on construction), the defaults, the checks that
can be switched off, and :func:`resolve` -- keyword options split between the generation and the LLM settings.

::

    from ragexam.questions.config import GenerateConfig, resolve

    config, settings = resolve("gpt-4o-mini", 20, {"mix": "meaning=1", "base_url": "http://..."})
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Dict, Mapping, Optional, Sequence, Tuple, Union

from ragexam.errors import InputError, integer_in, number_in, option
from ragexam.llm.settings import LLMSettings
from ragexam.metrics.judge.builtin.faithfulness import METRIC as FAITHFULNESS
from ragexam.questions.prompts import CITE_MODES
from ragexam.questions.sampling import MixSpec

__all__ = ["GenerateConfig", "CHECKS", "DEFAULT_SEED", "DEFAULT_TEMPERATURE", "FOCUS_TEMPERATURE", "DEFAULT_CITE",
           "DEFAULT_PROMPT_LANGUAGE", "DEFAULT_MAX_TOKENS", "FOCUS_MAX_TOKENS", "default_temperature", "resolve",
           "parse_kinds", "MixSpec", "Option", "LLM_CHECKS"]

DEFAULT_SEED = 12345
DEFAULT_MAX_TOKENS = 2048
#: the completion limit of a ``--cite focus`` call (one question and a short answer)
FOCUS_MAX_TOKENS = 400
#: the generator's sampling temperature when none is given: varied questions from a passage asked several times;
#: in the focus mode every call is about another sentence and the local 1.5B model wrote worse questions sampled
#: (docs/generate.md, "Measured on a real model"), so greedy
DEFAULT_TEMPERATURE = 0.7
FOCUS_TEMPERATURE = 0.0
#: the instruction language of the prompts when none is chosen (measured: docs/generate.md, "Prompts")
DEFAULT_PROMPT_LANGUAGE = "en"
#: how the model cites evidence when not chosen (measured: docs/generate.md, "Citation modes")
DEFAULT_CITE = "focus"
#: the LLM checks that can be switched off (:mod:`.llm_checks`)
LLM_CHECKS: Tuple[str, ...] = ("critic", "reader", FAITHFULNESS.name)
#: every check that can be switched off: the deterministic ``injection`` (addresses_model), ``guards``
#: (not_a_question, off_topic, answer_type_mismatch, ...), ``premise`` (:func:`.checks.premise_problem`),
#: ``title`` (:func:`.checks.title_problem`) and ``fragment`` (:func:`.checks.fragment_problem`), and the LLM
#: checks of :mod:`.llm_checks`
CHECKS: Tuple[str, ...] = ("injection", "guards", "premise", "title", "fragment") + LLM_CHECKS

#: one keyword option of :func:`resolve` (a field of :class:`GenerateConfig` or of ``LLMSettings``)
Option = Union[None, str, int, float, bool, Sequence[str], Mapping[str, str], Mapping[str, float]]


def default_temperature(cite: str = "auto") -> float:
    """The generator's temperature when none is given, for citation mode ``cite`` (``auto``: the default mode)."""
    return FOCUS_TEMPERATURE if (cite if cite != "auto" else DEFAULT_CITE) == "focus" else DEFAULT_TEMPERATURE


@dataclass(frozen=True)
class GenerateConfig:
    """Settings of a generation (validated on construction; docs/generate.md, "Options").

    :ivar n: questions wanted.  :ivar mix: kind -> weight or ``"kind=w,..."`` (``None``: the default mix,
        :data:`.sampling.DEFAULT_MIX`, without ``multi`` when the generator checks itself).  :ivar kinds: extra
        kinds, name -> instruction.  :ivar per_call: questions asked per call (1-10).  :ivar language: ``auto`` |
        ``ko`` | ``en`` (the questions and the decline text).
    :ivar prompt: a prompt file replacing the bundled one.  :ivar section_chars: section size.
    :ivar seed: sampling seed (also sent to the endpoint).  :ivar ambiguous: ``join`` | ``drop``.
    :ivar dedup_at, copy_at, lexical_at: thresholds of :mod:`.measure`.  :ivar min_evidence_chars,
        max_evidence_chars: evidence length limits (normalised characters).  :ivar retriever: spec
        used for related sections and the out-of-corpus search.  :ivar ooc_top: sections retrieved
        per out-of-corpus candidate.  :ivar ooc_max_relevance: highest judged relevance (1-5) a top
        section may have.  :ivar max_attempts: replies per call.  :ivar max_passes: passes at most.
    :ivar max_calls, budget: spending limits of this run (every call, generation and checks; USD).
    :ivar max_generation_calls: generation calls this run may make (the checks not counted), so "N kept in M
        generation calls" can be asked.  :ivar id_prefix: query id prefix.
    :ivar cite: how the model cites evidence: ``spans`` (copied text; quote frames unwrapped),
        ``sentences`` (numbers of the shown sentences) or ``focus`` (ragexam chooses a sentence -- two for
        ``multi`` -- and the model writes one question it answers, after worked examples; ``per_call`` is 1).
    :ivar prompt_language: the language of the instructions (``auto``: :data:`DEFAULT_PROMPT_LANGUAGE`; the
        questions are always in the corpus's language).  :ivar skip_checks: checks switched off (names of
        :data:`CHECKS`).  :ivar agree_at: the answer_correctness score (1-5) at which the reader's answer agrees
        with the key.
    """

    n: int
    mix: MixSpec = None
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
    max_generation_calls: Optional[int] = None
    budget: Optional[float] = None
    id_prefix: str = "gen"
    cite: str = "auto"
    prompt_language: str = "auto"
    skip_checks: Tuple[str, ...] = ()
    agree_at: int = 4

    def __post_init__(self) -> None:
        if not (isinstance(self.kinds, Mapping) and all(isinstance(k, str) and isinstance(v, str)
                                                        for k, v in self.kinds.items())):
            raise InputError(f"received {self.kinds!r}; expected a dict of kind names to their instructions, e.g. "
                             "kinds={'procedure': 'asks how to carry out a multi-step procedure'}",
                             source=option("kinds", "--kind"), field="kinds")
        for name, low, high, optional in (("n", 1, None, False), ("per_call", 1, 10, False),
                                          ("section_chars", 200, None, False), ("min_evidence_chars", 1, None, False),
                                          ("max_evidence_chars", 1, None, False), ("ooc_top", 1, 20, False),
                                          ("ooc_max_relevance", 1, 4, False), ("max_attempts", 1, 10, False),
                                          ("max_passes", 1, None, False), ("max_calls", 1, None, True),
                                          ("max_generation_calls", 1, None, True), ("agree_at", 1, 5, False)):
            self._integer(name, low, high, optional)
        self._modes()
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise InputError(f"received {self.seed!r}; expected an integer", source="--seed", field="seed")
        for name, low, high, optional in (("dedup_at", 0.0, 1.0, False), ("copy_at", 0.0, 1.0, False),
                                          ("lexical_at", 0.0, 1.01, False), ("budget", 0.0, float("inf"), True)):
            self._number(name, low, high, optional)
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

    def _integer(self, name: str, low: int, high: Optional[int], optional: bool) -> None:
        v = getattr(self, name)
        if optional and v is None:
            return
        integer_in(v, low, high, source=_opt(name), field=name)

    def _number(self, name: str, low: float, high: float, optional: bool) -> None:
        v = getattr(self, name)
        if optional and v is None:
            return
        number_in(v, low, high, source=_opt(name), field=name)

    def _modes(self) -> None:
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

    @property
    def cite_mode(self) -> str:
        """The citation mode in use (``auto`` resolved)."""
        return self.cite if self.cite != "auto" else DEFAULT_CITE

    @property
    def instruction_language(self) -> str:
        """The prompts' instruction language in use (``auto`` resolved)."""
        return self.prompt_language if self.prompt_language != "auto" else DEFAULT_PROMPT_LANGUAGE


def _opt(name: str) -> str:
    return "--" + name.replace("_", "-")


def parse_kinds(specs: Optional[Sequence[str]]) -> Dict[str, str]:
    """``["NAME=INSTRUCTION", ...]`` (the ``--kind`` option) as ``{name: instruction}``."""
    out: Dict[str, str] = {}
    for spec in specs or ():
        name, sep, text = str(spec).partition("=")
        if not sep:
            raise InputError(f"received {spec!r}; expected NAME=INSTRUCTION, e.g. procedure='asks how to carry out "
                             "a multi-step procedure'", source="--kind", field="kind")
        if name.strip() in out:
            raise InputError(f"kind {name.strip()!r} is given twice", source="--kind", field="kind")
        out[name.strip()] = text
    return out


def resolve(model: Optional[str], n: Optional[int], options: Mapping[str, Option],
            settings: Optional[LLMSettings] = None,
            config: Optional[GenerateConfig] = None) -> Tuple[GenerateConfig, LLMSettings]:
    """The :class:`GenerateConfig` and the generator's :class:`~ragexam.llm.settings.LLMSettings` from keyword
    ``options`` (fields of either; an unknown one is an :class:`InputError` listing both), ``n``, ``model`` and
    optional ``settings`` / ``config`` objects the options then override.  The generator's temperature defaults
    to :func:`default_temperature` of the citation mode."""
    from ragexam.llm.settings import dict_keywords, object_expected, settings_object

    if settings is not None:
        settings_object(settings, "settings")
    if config is not None and not isinstance(config, GenerateConfig):
        raise object_expected(config, "config", "GenerateConfig", dict_keywords(config) or "n=200, mix=..., ...")
    if n is not None:
        options = dict(options, n=n)
    elif config is None:
        raise InputError("needs n, the number of questions (e.g. n=200)", source="-n", field="n")
    cfg_names = {f.name for f in fields(GenerateConfig)}
    llm_names = {f.name for f in fields(LLMSettings)} - {"model", "seed"}
    cfg_opts = {k: v for k, v in options.items() if k in cfg_names}
    llm_opts = {k: v for k, v in options.items() if k in llm_names}
    unknown = sorted(set(options) - cfg_names - llm_names)
    if unknown:
        raise InputError(f"unknown option(s) {', '.join(unknown)}; expected fields of GenerateConfig "
                         f"({', '.join(sorted(cfg_names))}) or LLMSettings ({', '.join(sorted(llm_names))})",
                         source="generate", field=unknown[0])
    config = GenerateConfig(**cfg_opts) if config is None else (replace(config, **cfg_opts) if cfg_opts else config)
    if settings is None:
        if not model:
            raise InputError("needs a model (e.g. gpt-4o-mini, or a local model name with base_url)",
                             source="--model", field="model")
        llm_opts.setdefault("temperature", default_temperature(config.cite))
        return config, LLMSettings(model, **llm_opts)
    if llm_opts:
        settings = settings.replace(**llm_opts)
    if model and model != settings.model:
        settings = settings.replace(model=model)
    return config, settings
