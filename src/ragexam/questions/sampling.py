"""Which passages the generator shows the model, in which order, and how many questions of each kind.

Sections
--------
A document is cut into *sections* for the prompt: blank-line paragraphs packed up to
``section_chars`` characters (the ``paragraphs:SIZE`` chunker); a piece still longer than that is cut
into sentences packed the same way (``sentences:SIZE``), and a sentence longer than twice
``section_chars`` into plain windows of ``section_chars`` characters.  A short document is one section.
Section ids are ``DOC_ID#sI`` (0-based); a section knows its document, raw offsets and ``part``/``parts``.

Coverage order
--------------
:class:`Coverage` hands out sections so that **every section is used once before any is used twice**,
and the first sections handed out come from distinct documents: with a seeded
``numpy.random.default_rng(seed)`` it shuffles the documents and each document's sections, then
deals one section of every document, then a second of every document that has one, and so on.
When every section has been used it deals a new shuffled cycle.  A *pass* of the generator takes
at most one request per section (:meth:`Coverage.take` skips sections already taken in the pass).

Mix
---
A mix is ``kind=weight`` pairs (``meaning=0.4,lexical=0.35,multi=0.15,out_of_corpus=0.1``, the
default); weights are normalised (so counts that sum to ``n`` work too).  :func:`targets` turns it
into counts that sum to ``n`` by largest remainders (ties in mix order).

Related documents (``multi``)
-----------------------------
The partner of a section for a two-document question is the best-ranked section of *another*
document when the section's text is the query of the generator's retriever (``--retriever``,
default ``bm25``: Kiwi morphemes for Korean) over all sections; a pair is used once.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Deque, Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple, Union

from ragexam.questions.prompts import Passage
from ragexam.data.schema import Document
from ragexam.errors import InputError

if TYPE_CHECKING:
    from ragexam.retrieval.base import Retriever

__all__ = ["Section", "build_sections", "Coverage", "DEFAULT_MIX", "parse_mix", "targets", "Pairs",
           "check_kinds", "MixSpec"]

#: a mix as ``--mix`` takes it (``"meaning=0.5,lexical=0.5"``) or as a mapping; ``None``: the default
MixSpec = Union[None, str, Mapping[str, float]]

DEFAULT_MIX: Dict[str, float] = {"meaning": 0.4, "lexical": 0.35, "multi": 0.15, "out_of_corpus": 0.1}


@dataclass(frozen=True)
class Section:
    """A piece of a document shown to the model."""

    sid: str
    doc_id: str
    start: int
    end: int
    text: str
    part: int
    parts: int
    title: Optional[str]

    def passage(self) -> Passage:
        return Passage(self.doc_id, self.text, self.part, self.parts, self.title)


def _spans(content: str, size: int) -> List[Tuple[int, int]]:
    from ragexam.data.chunking import parse_chunker

    out: List[Tuple[int, int]] = []
    for s, e in parse_chunker(f"paragraphs:{size}").spans(content):
        if e - s <= size:
            out.append((s, e))
            continue
        for s2, e2 in parse_chunker(f"sentences:{size}").spans(content[s:e]):
            a, b = s + s2, s + e2
            if b - a <= 2 * size:
                out.append((a, b))
            else:
                out.extend((x, min(b, x + size)) for x in range(a, b, size))
    return out


def build_sections(documents: Iterable[Document], section_chars: int) -> List[Section]:
    """Every document's sections, in corpus order (see the module docstring)."""
    out: List[Section] = []
    for d in documents:
        spans = _spans(d.content, section_chars) if len(d.content) > section_chars else \
            ([(0, len(d.content))] if d.content.strip() else [])
        for i, (s, e) in enumerate(spans):
            out.append(Section(f"{d.doc_id}#s{i}", d.doc_id, s, e, d.content[s:e], i + 1, len(spans), d.title))
    return out


class Coverage:
    """Deals sections in coverage order (see the module docstring)."""

    def __init__(self, sections: Sequence[Section], seed: int) -> None:
        import numpy as np

        self.sections = list(sections)
        self._rng = np.random.default_rng(seed)
        self._queue: Deque[int] = deque()
        self.uses: Dict[str, int] = {s.sid: 0 for s in self.sections}

    def _cycle(self) -> List[int]:
        by_doc: Dict[str, List[int]] = {}
        for i, s in enumerate(self.sections):
            by_doc.setdefault(s.doc_id, []).append(i)
        docs = list(by_doc)
        order = [docs[j] for j in self._rng.permutation(len(docs))]
        stacks = {d: [by_doc[d][j] for j in self._rng.permutation(len(by_doc[d]))] for d in order}
        out: List[int] = []
        level = 0
        while len(out) < len(self.sections):
            for d in order:
                if level < len(stacks[d]):
                    out.append(stacks[d][level])
            level += 1
        return out

    def take(self, taken: Set[str], skip: Optional[Callable[[Section], bool]] = None) -> Optional[Section]:
        """The next section not in ``taken`` (the sections of the current pass) and not ``skip`` ped (left in
        place for later), or ``None`` when there is none."""
        if len(taken) >= len(self.sections):
            return None
        for attempt in range(2):
            for pos, i in enumerate(self._queue):
                sec = self.sections[i]
                if sec.sid not in taken and (skip is None or not skip(sec)):
                    del self._queue[pos]
                    self.uses[sec.sid] += 1
                    return sec
            if attempt == 0:  # after one more cycle every section is in the queue: none qualifies if not found
                self._queue.extend(self._cycle())
        return None


def parse_mix(text: MixSpec, known: Sequence[str]) -> Dict[str, float]:
    """A mix from ``"kind=w,kind=w"`` or a mapping; weights normalised to sum 1 (see the module
    docstring).  :raises InputError: unknown kind, weight not a number >= 0, all weights 0."""
    if text is None:
        return dict(DEFAULT_MIX)
    pairs: List[Tuple[str, object]] = []
    if isinstance(text, Mapping):
        pairs = list(text.items())
    elif isinstance(text, str):
        for part in text.split(","):
            if not part.strip():
                continue
            name, sep, value = part.partition("=")
            if not sep:
                raise InputError(f"cannot read {part.strip()!r}; expected KIND=WEIGHT pairs joined by ',', e.g. "
                                 "meaning=0.5,lexical=0.3,out_of_corpus=0.2", source="--mix", field="mix")
            pairs.append((name.strip(), value.strip()))
    else:
        raise InputError(f"received a {type(text).__name__}; expected 'kind=weight,...' or a mapping",
                         source="--mix", field="mix")
    out: Dict[str, float] = {}
    for name, value in pairs:
        if name not in known:
            raise InputError(f"unknown kind {name!r}; expected one of {', '.join(known)} (add your own with --kind "
                             "NAME=INSTRUCTION)", source="--mix", field="mix")
        if name in out:
            raise InputError(f"kind {name!r} is given twice", source="--mix", field="mix")
        try:
            w = float(value)
        except (TypeError, ValueError):
            w = float("nan")
        if isinstance(value, bool) or not math.isfinite(w) or w < 0:
            raise InputError(f"{name}={value!r}: expected a number >= 0", source="--mix", field="mix")
        out[name] = w
    total = sum(out.values())
    if total <= 0:
        raise InputError("every weight is 0; expected at least one kind with a weight > 0", source="--mix",
                         field="mix")
    return {k: v / total for k, v in out.items() if v > 0}


def targets(mix: Mapping[str, float], n: int) -> Dict[str, int]:
    """Counts per kind summing to ``n``: floors of ``w * n`` plus largest remainders (ties in mix order)."""
    raw = {k: w * n for k, w in mix.items()}
    out = {k: int(math.floor(v + 1e-9)) for k, v in raw.items()}
    left = n - sum(out.values())
    order = sorted(mix, key=lambda k: (-(raw[k] - out[k]), list(mix).index(k)))
    for k in order[:left]:
        out[k] += 1
    return out


class Pairs:
    """Partners for two-document questions (see the module docstring), from a retriever over sections."""

    def __init__(self, sections: Sequence[Section], retriever: Retriever, depth: int = 20) -> None:
        self.sections = list(sections)
        self.by_id = {s.sid: s for s in self.sections}
        self.retriever = retriever
        self.depth = max(1, min(depth, len(self.sections)))
        self._ranked: Dict[str, List[str]] = {}
        self.used: Set[Tuple[str, str]] = set()

    def partner(self, sec: Section) -> Optional[Section]:
        """The best-ranked unused partner of ``sec`` from another document, or ``None``."""
        if sec.sid not in self._ranked:
            hits = self.retriever.search([sec.text], top_n=self.depth)[0]
            self._ranked[sec.sid] = [cid for cid, _ in hits]
        for cid in self._ranked[sec.sid]:
            other = self.by_id[cid]
            if other.doc_id != sec.doc_id and (sec.sid, cid) not in self.used:
                self.used.add((sec.sid, cid))
                return other
        return None


def check_kinds(mix: Mapping[str, float], documents: int) -> None:
    """A ``multi`` share needs two documents."""
    if mix.get("multi", 0) > 0 and documents < 2:
        raise InputError(f"multi questions need two related documents; the corpus has {documents}. Leave multi "
                         "out of --mix.", source="--mix", field="mix")

