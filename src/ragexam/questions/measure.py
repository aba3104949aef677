"""What the generator measures about a question: overlap, anchors, type, near-duplicates, language.

Every function here is pure and deterministic; the definitions below are the ones the question
set's card and signature refer to.

Terms (``overlap:kiwi`` for Korean, ``overlap:words`` otherwise)
-----------------------------------------------------------------
*Terms* of a text: for Korean, the kiwipiepy morphemes (:func:`ragexam.data.kiwi.tokenize`, the
one shared analyser) whose tag is a content tag (:data:`KIWI_CONTENT_TAGS`: nouns, numerals,
verb and adjective stems, roots, general adverbs, foreign words, numbers, Hanja, e-mail/URL/
serial tokens), lower-cased; otherwise the lower-cased words ``[^\\W_]+`` (letters and digits)
that are not in :data:`EN_STOPWORDS`.  Texts are normalised first
(:func:`ragexam.data.normalization.normalize`).

*Overlap* (stored per question): ``|T(q) & T(e)| / |T(q)|`` with ``T`` the set of terms,
``q`` the question and ``e`` its evidence strings joined; 0.0 for a question without terms.

*Anchors* (stored per question): the code-like tokens of the question (:data:`CODE`: Latin letters
and digits with inner ``. _ - / @``, at least 2 characters) that also occur in the *evidence
passage* -- the blank-line paragraph(s) of the source document holding each evidence string --
compared lower-cased, and that look like a code, name or number: the token has a digit, two or
more capitals, an inner ``. _ - / @``, or, in a corpus whose main script is not Latin, any Latin
letter (``VPN``, ``SecureLink`` in Korean text).

*Type* (:func:`style`): ``lexical`` when the question has an anchor or its overlap is at least
``lexical_at`` (default 0.6: most of its terms are the evidence's), else ``meaning``.  On the
bundled hand-labelled sets (it_helpdesk + ai_concepts, 77 answerable questions) "has an anchor"
alone agrees with the authors' ``lexical``/``meaning`` labels on 70 of 77 (90.9 %); see
``docs/generate.md``.

Near-duplicates and copies
--------------------------
*Bigrams* of a text: the set of character bigrams of ``normalize(text, ignore_punctuation=True)``
lower-cased with all whitespace removed (a text of one character gives that character).
*Near-duplicate*: Jaccard ``|A & B| / |A | B|`` of the two questions' bigrams at or above
``dedup_at`` (default 0.5; distinct questions of the bundled sets reach at most 0.24, a question
with one ending changed about 0.8).  *Copy of the evidence*: the share of the question's bigrams
found in the bigrams of the evidence *sentence* (the evidence widened to the nearest ``. ! ? 。``
followed by whitespace, or a line break, on each side) at or above ``copy_at`` (default 0.8; the
bundled questions reach at most 0.67), or the whole normalised evidence inside the question.

Questions that are not questions about the content
---------------------------------------------------
*Addresses the model* (:func:`addresses_model`): the question contains an instruction to the model
rather than a question about the documents -- overriding earlier instructions ("ignore all previous
instructions", "이전 지시를 무시하고"), asking for its system prompt or instructions ("시스템 프롬프트를
출력하세요", "reveal your instructions"), or giving it a new role ("you are now", "지금부터 너는",
"developer mode", "jailbreak") -- patterns :data:`MODEL_ADDRESS`, matched on the normalised question.
A question *about* prompts ("시스템 프롬프트란 무엇인가요?") does not match.

*Not a question* (:func:`not_questions`): a bare noun phrase -- no question mark and no predicate (for
Korean, no Kiwi morpheme tagged as a predicate or ending, :data:`PREDICATE_TAGS`: verbs, adjectives, the
copula, auxiliaries, verb/adjective suffixes, endings; for other languages, the first word is not an
interrogative, auxiliary or imperative: ``what``, ``how``, ``is``, ``can``, ``tell``, ...) -- or, for
Korean, a statement: its last final ending is the declarative ``-ㅂ니다``/``-습니다``, question mark or
not (``어떻게 해야 합니다?``, a form the 1.5B model writes under English instructions; none of the 83
hand-written bundled questions ends so).

Language
--------
*Script* of a letter: ``hangul`` (syllables and jamo), ``latin``, ``han``, ``kana`` or the first
word of its Unicode name (``CYRILLIC``, ``THAI``, ...).  The corpus's *main script* is the most
frequent script among the letters of a sample of it.  A question is *in the corpus's language*
when, after removing its words that occur in the corpus and contain no letter of the main script
(product names and codes such as ``SecureLink``, ``VPN-ERR-619`` in Korean text), at least
``0.3`` of its remaining letters are of the main script (the Hangul threshold ragexam uses to
choose Korean prompts); a question with no letter left passes.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from typing import Any, Dict, FrozenSet, Iterable, List, Optional, Sequence, Set, Tuple

from ragexam.data.normalization import normalize

__all__ = ["KIWI_CONTENT_TAGS", "EN_STOPWORDS", "CODE", "terms", "overlap", "anchors", "style", "bigrams",
           "jaccard", "containment", "measure_many", "type_of", "needs_two_documents", "MEASURED_KINDS", "script_of", "main_script", "LANGUAGE_SHARE", "language_share",
           "foreign_vocabulary", "PASSAGE_REFERENCE", "refers_to_passage", "sentence_around",
           "paragraph_around", "scope_texts", "MODEL_ADDRESS", "addresses_model", "not_questions", "PREDICATE_TAGS",
           "DECLARATIVE_ENDINGS", "ASSERTED_TAGS", "asserted_terms", "scripts_of", "unseen_script",
           "polarities"]

#: kiwipiepy tags whose morphemes count as terms
KIWI_CONTENT_TAGS: FrozenSet[str] = frozenset({
    "NNG", "NNP", "NR", "VV", "VA", "XR", "MAG", "SL", "SN", "SH", "VV-I", "VA-I", "VV-R", "VA-R",
    "W_EMAIL", "W_URL", "W_SERIAL", "W_HASHTAG", "W_MENTION"})

#: English function words left out of word terms
EN_STOPWORDS: FrozenSet[str] = frozenset(
    "a an the and or but if then so of to in on at by for with from into onto about as is are was were be been "
    "being am do does did doing have has had having i me my we our you your he him his she her it its they them "
    "their this that these those what which who whom whose when where why how can could should would will shall "
    "may might must not no yes there here any some all each more most other such than too very just also only "
    "own same up down out over under again once".split())

#: a code-like token: Latin letters and digits with inner ``. _ - / @`` (Hangul ends it: ``VPN-ERR-619가``)
CODE = re.compile(r"[0-9A-Za-z\u00C0-\u024F](?:[0-9A-Za-z\u00C0-\u024F._/@-]*[0-9A-Za-z\u00C0-\u024F])?")
_WORD = re.compile(r"[^\W_]+")
_INNER = re.compile(r"[._/@-]")

#: share of the main script's letters a question needs (the Hangul share at which ragexam picks Korean)
LANGUAGE_SHARE = 0.3


# -- terms and overlap --------------------------------------------------------------------------------
def terms(texts: Sequence[str], language: str) -> List[Set[str]]:
    """The term set of each text (see the module docstring); ``language`` is ``ko`` or anything else."""
    norm = [normalize(t) for t in texts]
    if language == "ko":
        from ragexam.data.kiwi import tokenize

        return [{tok.form.lower() for tok in toks if tok.tag in KIWI_CONTENT_TAGS} for toks in tokenize(norm)]
    return [{w for w in (m.group().lower() for m in _WORD.finditer(t)) if w not in EN_STOPWORDS} for t in norm]


#: the terms of what a "yes" key asserts (Korean): :data:`KIWI_CONTENT_TAGS` without verb and adjective stems,
#: whose endings and auxiliaries (``받을 수 있습니다`` / ``받습니다``) vary freely between a key and its evidence
ASSERTED_TAGS: FrozenSet[str] = KIWI_CONTENT_TAGS - {"VV", "VA", "VV-I", "VA-I", "VV-R", "VA-R"}


def asserted_terms(text: str, language: str) -> Set[str]:
    """The terms a statement asserts, for :func:`ragexam.questions.checks.affirmation_problem`: in Korean
    the nouns, numerals, roots, foreign words, numbers and general adverbs of two or more characters (``매년``;
    not ``안``, ``꼭``); otherwise :func:`terms`."""
    if language != "ko":
        return terms([text], language)[0]
    from ragexam.data.kiwi import tokenize

    return {t.form.lower() for t in tokenize([normalize(text)])[0]
            if t.tag in ASSERTED_TAGS and not (t.tag == "MAG" and len(t.form) < 2)}


def overlap(question_terms: Set[str], evidence_terms: Set[str]) -> float:
    """``|q & e| / |q|`` (0.0 when the question has no term)."""
    return len(question_terms & evidence_terms) / len(question_terms) if question_terms else 0.0


def _code_like(token: str, latin_is_foreign: bool) -> bool:
    if any(c.isdigit() for c in token) or _INNER.search(token):
        return True
    if sum(1 for c in token if c.isupper()) >= 2:
        return True
    return latin_is_foreign and any(script_of(c) == "latin" for c in token if c.isalpha())


def anchors(question: str, passage: str, *, latin_is_foreign: bool) -> List[str]:
    """The anchors of ``question`` in ``passage`` (see the module docstring), sorted, lower-cased."""
    q = {m.group() for m in CODE.finditer(normalize(question)) if len(m.group()) >= 2}
    p = {m.group().lower() for m in CODE.finditer(normalize(passage))}
    return sorted({t.lower() for t in q if t.lower() in p and _code_like(t, latin_is_foreign)})


def style(overlap_value: float, anchor_list: Sequence[str], lexical_at: float) -> str:
    """``lexical`` when there is an anchor or ``overlap_value >= lexical_at``, else ``meaning``."""
    return "lexical" if anchor_list or overlap_value >= lexical_at else "meaning"


#: the kinds whose type is measured (a kind a user adds keeps its own name)
MEASURED_KINDS = ("meaning", "lexical", "multi", "out_of_corpus")


def needs_two_documents(documents_per_evidence: Sequence[Iterable[str]]) -> bool:
    """Whether no single document holds every evidence string (each given as the documents it occurs in)."""
    sets = [set(d) for d in documents_per_evidence]
    return len(sets) >= 2 and not set.intersection(*sets)


def type_of(multi: bool, kind: str, style_value: str) -> str:
    """The type of an answerable question: ``multi`` when no single document holds all of its evidence
    (:func:`needs_two_documents`), else the kind's own name for a kind a user added, else the measured style."""
    if multi:
        return "multi"
    if kind not in MEASURED_KINDS:
        return kind
    return style_value


def measure_many(questions: Sequence[str], evidence: Sequence[str], passages: Sequence[str], *, language: str,
                 latin_is_foreign: bool, lexical_at: float) -> List[Tuple[float, List[str], str]]:
    """``(overlap, anchors, style)`` of each question against its evidence (the strings joined) and its
    evidence passage (the paragraphs around them); one Kiwi call for all."""
    qt = terms(questions, language)
    et = terms(evidence, language)
    out = []
    for q, p, a, b in zip(questions, passages, qt, et):
        ov = round(overlap(a, b), 4)
        anc = anchors(q, p, latin_is_foreign=latin_is_foreign)
        out.append((ov, anc, style(ov, anc, lexical_at)))
    return out


# -- bigrams --------------------------------------------------------------------------------------------
def bigrams(text: str) -> FrozenSet[str]:
    """Character bigrams of the text (see the module docstring)."""
    t = "".join(normalize(text, ignore_punctuation=True).split()).lower()
    if len(t) < 2:
        return frozenset([t]) if t else frozenset()
    return frozenset(t[i:i + 2] for i in range(len(t) - 1))


def jaccard(a: FrozenSet[str], b: FrozenSet[str]) -> float:
    """``|a & b| / |a | b|``; 0.0 when both are empty."""
    union = len(a | b)
    return len(a & b) / union if union else 0.0


def containment(a: FrozenSet[str], b: FrozenSet[str]) -> float:
    """``|a & b| / |a|``: the share of ``a`` found in ``b``; 0.0 when ``a`` is empty."""
    return len(a & b) / len(a) if a else 0.0


# -- scripts and language ---------------------------------------------------------------------------------
def script_of(ch: str) -> str:
    """The script of one letter (see the module docstring)."""
    o = ord(ch)
    if 0xAC00 <= o <= 0xD7A3 or 0x1100 <= o <= 0x11FF or 0x3130 <= o <= 0x318F or 0xA960 <= o <= 0xA97F \
            or 0xD7B0 <= o <= 0xD7FF:
        return "hangul"
    if o < 0x250 or 0x1E00 <= o <= 0x1EFF or 0xFF21 <= o <= 0xFF5A:
        return "latin"
    if 0x4E00 <= o <= 0x9FFF or 0x3400 <= o <= 0x4DBF or 0xF900 <= o <= 0xFAFF or 0x20000 <= o <= 0x2FFFF:
        return "han"
    if 0x3040 <= o <= 0x30FF or 0x31F0 <= o <= 0x31FF or 0xFF66 <= o <= 0xFF9D:
        return "kana"
    name = unicodedata.name(ch, "")
    return name.split(" ", 1)[0].lower() if name else "other"


def main_script(texts: Iterable[str], limit: int = 200_000) -> str:
    """The most frequent script among the letters of ``texts`` (the first ``limit`` letters);
    ``latin`` when there is no letter.  Ties go to the script seen first."""
    counts: Counter = Counter()
    seen = 0
    for t in texts:
        for ch in t:
            if ch.isalpha():
                counts[script_of(ch)] += 1
                seen += 1
                if seen >= limit:
                    break
        if seen >= limit:
            break
    return counts.most_common(1)[0][0] if counts else "latin"


def scripts_of(texts: Iterable[str]) -> FrozenSet[str]:
    """Every script that has a letter in ``texts`` (each distinct character classified once)."""
    chars: Set[str] = set()
    for t in texts:
        chars.update(t)
    return frozenset(script_of(c) for c in chars if c.isalpha())


def unseen_script(question: str, scripts: FrozenSet[str]) -> Optional[str]:
    """The first run of the question's letters in a script that is not Latin and not in ``scripts`` (the
    corpus's), e.g. ``ограни`` in the 1.5B model's ``어떻게 ограни어되었는가?`` on a Korean corpus; ``None`` when
    there is none."""
    run: List[str] = []
    for ch in normalize(question) + " ":
        sc = script_of(ch) if ch.isalpha() else ""
        if sc and sc != "latin" and sc not in scripts and (not run or script_of(run[-1]) == sc):
            run.append(ch)
        elif run:
            return "".join(run)
    return None


def foreign_vocabulary(texts: Iterable[str], script: str) -> FrozenSet[str]:
    """Lower-cased code-like tokens of ``texts`` that contain no letter of ``script`` (product names and
    codes in another script than the corpus's)."""
    out: Set[str] = set()
    for t in texts:
        for m in CODE.finditer(normalize(t)):
            tok = m.group()
            if not any(c.isalpha() and script_of(c) == script for c in tok):
                out.add(tok.lower())
    return frozenset(out)


def language_share(question: str, script: str, foreign: FrozenSet[str]) -> Optional[float]:
    """Share of the question's letters in ``script`` after removing its ``foreign`` words (see the
    module docstring); ``None`` when no letter is left."""
    text = normalize(question)
    kept = CODE.sub(lambda m: " " if m.group().lower() in foreign else m.group(), text)
    letters = [c for c in kept if c.isalpha()]
    if not letters:
        return None
    return sum(1 for c in letters if script_of(c) == script) / len(letters)


# -- references to the passage ------------------------------------------------------------------------------
_KO_REF = (r"(?:이|위|위의|아래|본|해당|주어진|제시된|앞|앞의)\s*(?:문서|글|지문|본문|텍스트|자료|단락|문단|내용|기사|passage)"
           r"|본문(?:에서|에|의|을|를|에는|에선)|지문(?:에서|에|의|에는|에선|을|를)"
           r"|(?:문서|글|본문|지문)(?:에|에서)\s*(?:따르면|의하면|나온|나와|언급된|설명된|제시된)")
_EN_REF = (r"\b(?:according to|based on|as (?:stated|described|mentioned) in|in|from|per)\s+the\s+"
           r"(?:text|passage|passages|document|documents|article|context|excerpt|paragraph|above)\b"
           r"|\bthe\s+(?:above|given|provided|following|preceding)\s+(?:text|passage|document|article|context|"
           r"excerpt|paragraph)\b|\bthis\s+(?:passage|text|excerpt|article|paragraph|document)\b"
           r"|\bthe\s+(?:passage|excerpt)\b|\bthe\s+(?:text|document|article|context)\s+(?:above|below)\b"
           r"|\b(?:mentioned|described|stated)\s+above\b")
#: the patterns of :func:`refers_to_passage` (Korean and English), matched on the normalised question
PASSAGE_REFERENCE = re.compile(f"(?:{_KO_REF})|(?:{_EN_REF})", re.I)


def refers_to_passage(question: str) -> Optional[str]:
    """The first phrase of the question that refers to "the passage/document" (``이 문서에서``, ``위 글``,
    ``본문에서``, ``according to the text``, ``in the passage``, ``the passage``, ``this document``, ...), else
    ``None``.  Bare words such as
    ``문서`` or ``지문`` (which also means fingerprint) do not count: only the phrases above."""
    m = PASSAGE_REFERENCE.search(normalize(question))
    return m.group() if m else None


# -- instructions to the model, fragments ------------------------------------------------------------------
_KO_ADDRESS = (r"(?:이전|앞|앞선|위|위의|앞의|기존|모든|지금까지)\s*(?:의\s*)?(?:모든\s*)?(?:지시|지시사항|지침|명령|프롬프트|규칙|설정)"
               r"\S{0,3}\s*(?:모두\s*|전부\s*|다\s*)?(?:무시|잊)"
               r"|(?:지시|지시사항|지침|명령)\S{0,3}\s*(?:모두\s*|전부\s*|다\s*)?무시(?:하고|해|하세요|하라|하십시오)"
               r"|(?:시스템|숨겨진|내부|초기)\s*(?:프롬프트|메시지|지시)\S{0,3}\s*(?:을|를)?\s*(?:그대로\s*|전부\s*|모두\s*)?"
               r"(?:출력|보여|알려|공개|말해|노출|반복|복사)"
               r"|(?:너는|넌|당신은)\s*(?:이제|지금부터)|지금부터\s*(?:너는|넌|당신은)|개발자\s*모드|탈옥")
_EN_ADDRESS = (r"\b(?:ignore|disregard|forget|override)\s+(?:all\s+|any\s+|everything\s+)?(?:of\s+)?(?:the\s+|your\s+)?"
               r"(?:previous|prior|above|earlier|preceding|initial|original|system)?\s*"
               r"(?:instructions?|prompts?|rules|directions|guidelines|messages?)\b"
               r"|\b(?:reveal|print|show|repeat|output|display|tell me)\s+(?:me\s+)?(?:your|the)\s+(?:system\s+|hidden\s+|"
               r"initial\s+|original\s+)?(?:prompt|instructions)\b|\bsystem\s+prompt\b\s*(?:verbatim|word for word)"
               r"|\byou\s+are\s+now\b|\bfrom\s+now\s+on,?\s+you\b|\bdeveloper\s+mode\b|\bjailbreak|\bDAN\s+mode\b")
#: the patterns of :func:`addresses_model` (Korean and English), matched on the normalised question
MODEL_ADDRESS = re.compile(f"(?:{_KO_ADDRESS})|(?:{_EN_ADDRESS})", re.I)


def addresses_model(question: str) -> Optional[str]:
    """The first phrase of the question that is an instruction to the model (see the module docstring),
    else ``None``."""
    m = MODEL_ADDRESS.search(normalize(question))
    return m.group() if m else None


#: Kiwi tags of predicates and endings: a Korean question with none of them and no "?" is a noun phrase
PREDICATE_TAGS: FrozenSet[str] = frozenset({"VV", "VA", "VX", "VCP", "VCN", "XSV", "XSA", "EF", "VV-I", "VA-I",
                                            "VV-R", "VA-R", "EC"})
_EN_OPENERS = frozenset("what which who whom whose when where why how is are was were am do does did can could "
                        "should would will shall may might must have has had tell explain describe list name give "
                        "find show compare".split())


#: Kiwi forms of the Korean final endings that make a sentence a statement
DECLARATIVE_ENDINGS: FrozenSet[str] = frozenset({"ᆸ니다", "습니다"})


#: a stem's negation, after it: ``-ㄹ 수 없-`` (cannot), ``-지 않-`` / ``-지 못하-`` (does not, cannot)
_NOT_AFTER = (("ETM", "수", "없"), ("지", "않"), ("지", "못하"))
_STEM_TAGS = frozenset({"VV", "VA", "VV-I", "VA-I", "VV-R", "VA-R"})


def _stems(toks: Sequence[Any]) -> List[Tuple[int, str]]:
    """(index of the stem's last morpheme, stem) of each predicate: a verb or adjective (not 있/없 themselves),
    or a noun made a verb by 하/되 (``신청하`` -> ``신청``)."""
    out = []
    for i, t in enumerate(toks):
        if t.tag in _STEM_TAGS and t.form not in ("있", "없"):
            out.append((i, t.form))
        elif t.tag in ("XSV", "XSA") and i and toks[i - 1].tag in ("NNG", "NNP", "XR"):
            out.append((i, toks[i - 1].form))
    return out


def _negated(toks: Sequence[Any], i: int, start: int) -> bool:
    after = [(t.tag, t.form) for t in toks[i + 1:i + 4]]
    for pat in _NOT_AFTER:
        if len(after) >= len(pat) and all(a[0] == p or a[1] == p for a, p in zip(after, pat)):
            return True
    before = toks[start - 1] if start else None
    if before is not None and before.tag == "MAG" and before.form in ("못", "안"):
        return True
    # "보내는 것은 금지됩니다": the stem, 는/ㄴ + 것 + a particle, then 금지/불가
    rest = [t.form for t in toks[i + 1:i + 5]]
    return len(rest) >= 4 and rest[1] == "것" and rest[3] in ("금지", "불가")


def polarities(texts: Sequence[str]) -> List[Dict[str, Set[str]]]:
    """Korean: for each text, predicate stem -> the polarities it occurs with, ``+`` or ``-`` (negated: ``-ㄹ 수
    없다``, ``-지 않다``, ``-지 못하다``, ``못``/``안`` before it, ``-는 것은 금지/불가``), and ``can`` where it is
    ``-ㄹ 수 있다``.  ``신청할 수 없습니다`` gives ``{"신청": {"-"}}``, ``신청할 수 있는`` gives
    ``{"신청": {"+", "can"}}``."""
    from ragexam.data.kiwi import tokenize

    out: List[Dict[str, Set[str]]] = []
    for toks in tokenize([normalize(t) for t in texts]):
        pol: Dict[str, Set[str]] = {}
        for i, stem in _stems(toks):
            start = i - 1 if toks[i].tag in ("XSV", "XSA") else i
            marks = pol.setdefault(stem, set())
            if _negated(toks, i, start):
                marks.add("-")
            else:
                marks.add("+")
                after = [t.form for t in toks[i + 1:i + 4]]
                if len(after) >= 3 and after[1] == "수" and after[2] == "있":
                    marks.add("can")
        out.append(pol)
    return out


def not_questions(questions: Sequence[str], language: str) -> List[Optional[str]]:
    """For each question: ``None``, or why it is not a question (``noun phrase`` / ``statement``; see the
    module docstring)."""
    norm = [normalize(q) for q in questions]
    asks = ["?" in q or "？" in q for q in norm]
    out: List[Optional[str]] = []
    if language == "ko":
        from ragexam.data.kiwi import tokenize

        for a, toks in zip(asks, tokenize(norm)):
            endings = [t.form for t in toks if t.tag == "EF"]
            if endings and endings[-1] in DECLARATIVE_ENDINGS:
                out.append("statement")
            elif not a and not any(t.tag in PREDICATE_TAGS for t in toks):
                out.append("noun phrase")
            else:
                out.append(None)
        return out
    for a, q in zip(asks, norm):
        words = [w.lower() for w in _WORD.findall(q)]
        out.append(None if a or (words and words[0] in _EN_OPENERS) else "noun phrase")
    return out


# -- scopes around an evidence occurrence -------------------------------------------------------------------
_SENT_END = re.compile(r"[.!?。](?=\s)|\n")
_PARA = re.compile(r"\n[^\S\n]*\n")


def sentence_around(content: str, start: int, end: int) -> str:
    """``content[start:end]`` widened to the sentence(s) holding it (see the module docstring)."""
    s = 0
    for m in _SENT_END.finditer(content, 0, start):
        s = m.end()
    m = _SENT_END.search(content, end)
    return content[s:m.end() if m else len(content)].strip()


def paragraph_around(content: str, start: int, end: int) -> str:
    """``content[start:end]`` widened to the blank-line paragraph(s) holding it."""
    s = 0
    for m in _PARA.finditer(content, 0, start):
        s = m.end()
    m = _PARA.search(content, end)
    return content[s:m.start() if m else len(content)].strip()


def scope_texts(content: str, spans: Iterable[Tuple[int, int]], which: str) -> str:
    """The sentences (``which="sentence"``) or paragraphs (``"paragraph"``) around each span, joined."""
    fn = sentence_around if which == "sentence" else paragraph_around
    return "\n".join(dict.fromkeys(fn(content, s, e) for s, e in spans))

