"""The *sample* stage: which calls a pass makes -- how many of each kind, on which section or sentence, with which
messages and cache key (:class:`~ragexam.questions.products.Task`).

Each pass asks, for every kind still short of its target, for ``ceil(deficit / (per_call * yield))`` calls
(``yield``: the share of that kind's requested questions kept so far, :data:`INITIAL_YIELD` before any is known, at
least :data:`MIN_YIELD`; a kind of which none of :data:`GIVE_UP_AFTER` questions asked for was kept is asked for no
more, with a note), interleaving the kinds, each call on the next section in coverage order
(:class:`~ragexam.questions.sampling.Coverage`; a pass uses a section at most once).  A ``multi`` call adds the
section's most related section of another document; an ``out_of_corpus`` call shows one section and the corpus's
document titles.  A section shown again gets the questions already proposed from it ("do not repeat these").  In
the ``focus`` mode ragexam chooses the sentence (:func:`focus_task`).
"""

from __future__ import annotations

import math
import random
import re
from collections import Counter
from dataclasses import replace
from typing import Dict, List, Optional, Sequence, Set, Tuple

from ragexam.questions import measure as M
from ragexam.questions.products import Ledger, Task
from ragexam.questions.prompts import Passage
from ragexam.questions.sampling import Section
from ragexam.questions.setup import Setup

__all__ = ["sample", "focus_task", "focus_candidates", "call_key", "CALL_FORMAT", "INITIAL_YIELD", "MIN_YIELD",
           "GIVE_UP_AFTER", "AVOID_MAX", "MULTI_SHARED_TERMS"]

CALL_FORMAT = "ragexam-questions-call/1"
#: maximum questions remembered per section for the "already written" list
AVOID_MAX = 12
#: initial expected share of kept questions per kind, and its floor
INITIAL_YIELD = 0.7
MIN_YIELD = 0.2
#: a kind of which none of this many questions asked for was kept is not asked for again
GIVE_UP_AFTER = 8
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


def call_key(setup: Setup, messages: List[Dict[str, str]], sample: int) -> str:
    """The LLM cache key of a generation call (its ``sample``-th identical request)."""
    from ragexam.llm.cache import request_key

    s = setup.settings
    return request_key({"format": CALL_FORMAT, "kind": "questions", "model": setup.client.model,
                        "endpoint": setup.client.endpoint, "messages": messages, "temperature": s.temperature,
                        "max_tokens": s.max_tokens, "seed": s.seed, "prompt": setup.prompts.sha, "sample": sample})


def _calls_per_kind(setup: Setup, ledger: Ledger) -> Dict[str, int]:
    """Calls to make per kind this pass (see the module docstring), scaled to one per section."""
    counts = Counter(ledger.kept_types)
    calls: Dict[str, int] = {}
    for kind, target in setup.targets.items():
        deficit = target - counts.get(kind, 0)
        if deficit <= 0:
            continue
        asked = ledger.asked.get(kind, 0)
        if asked >= GIVE_UP_AFTER and not ledger.kept_by_kind.get(kind):
            ledger.notes.add(f"no {kind} question kept of {asked} asked for: not asked for again (the set is "
                             "filled with the other types)")
            continue
        y = ledger.kept_by_kind.get(kind, 0) / asked if asked >= setup.per_call else INITIAL_YIELD
        y = max(MIN_YIELD, min(1.0, y))
        calls[kind] = math.ceil(deficit / (setup.per_call * y))
    cap = len(setup.sections)
    total = sum(calls.values())
    if total > cap:  # one request per section in a pass: scale down, largest remainders
        share = {k: v * cap / total for k, v in calls.items()}
        calls = {k: int(math.floor(v)) for k, v in share.items()}
        for k in sorted(share, key=lambda k: -(share[k] - calls[k]))[:cap - sum(calls.values())]:
            calls[k] += 1
        calls = {k: max(1, v) for k, v in calls.items()}
    return calls


def sample(setup: Setup, ledger: Ledger) -> List[Task]:
    """The calls of the next pass (``ledger.pass_no``), in order, each with its cache key."""
    calls = _calls_per_kind(setup, ledger)
    order: List[str] = []
    left = dict(calls)
    while any(left.values()):
        for k in setup.mix:
            if left.get(k):
                order.append(k)
                left[k] -= 1
    tasks: List[Task] = []
    taken: Set[str] = set()
    for kind in order:
        focus = setup.cite == "focus" and kind != "out_of_corpus"
        sec = ledger.coverage.take(taken, lambda s, k=kind, f=focus: (s.sid, k) in ledger.exhausted or
                                   (f and not focus_candidates(setup, s, ledger)))
        if sec is None:
            continue
        taken.add(sec.sid)
        index = len(ledger.tasks) + len(tasks)
        task = focus_task(setup, kind, sec, ledger, index) if focus else _passage_task(setup, kind, sec, ledger, index)
        if task is not None:
            tasks.append(task)
    for t in tasks:
        ident = repr(t.messages)
        n = ledger.samples[ident]
        ledger.samples[ident] += 1
        t.key = call_key(setup, t.messages, n)
    return tasks


def _passage_task(setup: Setup, kind: str, sec: Section, ledger: Ledger, index: int) -> Optional[Task]:
    """A call that shows passages (``--cite spans`` / ``sentences``, and every out-of-corpus call)."""
    secs: Tuple[Section, ...] = (sec,)
    if kind == "multi":
        other = setup.pairs.partner(sec)
        if other is None:
            ledger.notes.add(f"section {sec.sid} has no unused related section of another document")
            return None
        secs = (sec, other)
    request = ledger.coverage.uses[sec.sid]
    avoid = ledger.proposed.get(sec.sid, [])[-AVOID_MAX:]
    numbers: Dict[int, str] = {}
    if setup.cite == "sentences" and kind != "out_of_corpus":
        passages, numbers = _numbered(setup, secs)
    else:
        passages = [s.passage() for s in secs]
    messages = setup.prompts.messages(kind, passages, setup.per_call,
                                      titles=setup.titles if kind == "out_of_corpus" else (), avoid=avoid,
                                      request=request, language=setup.language,
                                      cite="spans" if setup.cite == "focus" else setup.cite)
    return Task(index, ledger.pass_no, kind, secs, request, messages, numbers=numbers)


def _numbered(setup: Setup, secs: Sequence[Section]) -> Tuple[List[Passage], Dict[int, str]]:
    """The passages of ``secs`` with numbered sentences (numbers run on), and number -> sentence."""
    out, numbers = [], {}
    for sec in secs:
        shown = []
        for text in setup.sentences(sec):
            k = len(numbers) + 1
            numbers[k] = text
            shown.append((k, text))
        out.append(replace(sec.passage(), numbered=tuple(shown)))
    return out, numbers


# -- the focus mode: ragexam chooses the sentences -------------------------------------------------------
def focus_candidates(setup: Setup, sec: Section, ledger: Ledger) -> List[int]:
    """The sentences of ``sec`` a focus question may still be about, in the section's seeded order: not asked
    about yet, of an evidence's length (``min_evidence_chars``-``max_evidence_chars`` characters), and not
    leaning on their neighbours (:data:`_LEANS`: a question written from "위 방법으로 해결되지 않으면 …" or
    "자주 보이는 오류는 다음과 같습니다." cannot stand on its own)."""
    c = setup.config
    texts = setup.sentences(sec)
    order = list(range(len(texts)))
    random.Random(f"{c.seed}:{sec.sid}").shuffle(order)
    return [i for i in order if (sec.sid, i) not in ledger.focus_used
            and c.min_evidence_chars <= len(" ".join(texts[i].split())) <= c.max_evidence_chars
            and not _LEANS.search(" ".join(texts[i].split()))]


def focus_task(setup: Setup, kind: str, sec: Section, ledger: Ledger, index: int) -> Optional[Task]:
    """One ``--cite focus`` call: the next sentence of ``sec`` (for ``lexical``, the next that holds a code,
    name, number or quotation, when one is left); for ``multi`` the pair of a sentence of ``sec`` and one of
    the related section of another document that shares the most terms (``None`` when none shares
    :data:`MULTI_SHARED_TERMS`: two unrelated sentences make no two-document question)."""
    free = focus_candidates(setup, sec, ledger)
    texts = setup.sentences(sec)
    pick = free[0]
    if kind == "lexical":
        pick = next((i for i in free if _ANCHORED.search(texts[i])), pick)
    chosen: List[Tuple[Section, int]] = [(sec, pick)]
    if kind == "multi":
        pair = _focus_pair(setup, sec, free, ledger)
        if pair is None:
            return None
        chosen = pair
    for s_, i in chosen:
        ledger.focus_used.add((s_.sid, i))
    sentences = [setup.sentences(s_)[i] for s_, i in chosen]
    documents = [setup.titles_by_doc.get(s_.doc_id) or s_.doc_id for s_, _ in chosen]
    messages = setup.prompts.focus_messages(kind, documents, sentences, language=setup.language)
    secs = tuple(dict.fromkeys(s_ for s_, _ in chosen))
    return Task(index, ledger.pass_no, kind, secs, ledger.coverage.uses[sec.sid], messages,
                numbers={k: t for k, t in enumerate(sentences, 1)}, focus=True)


def _focus_pair(setup: Setup, sec: Section, free: List[int], ledger: Ledger) -> Optional[List[Tuple[Section, int]]]:
    """The two sentences of a ``multi`` focus call (see :func:`focus_task`), or ``None`` with a note."""
    other = setup.pairs.partner(sec)
    if other is None or not focus_candidates(setup, other, ledger):
        ledger.notes.add(f"section {sec.sid} has no unused related section of another document")
        return None
    theirs = focus_candidates(setup, other, ledger)
    texts = setup.sentences(sec)
    terms = M.terms([texts[i] for i in free] + [setup.sentences(other)[j] for j in theirs], setup.language)
    mine, shared = terms[:len(free)], terms[len(free):]
    best = max(((len(mine[a] & shared[b]), -a, -b) for a in range(len(free)) for b in range(len(theirs))))
    if best[0] < MULTI_SHARED_TERMS:
        ledger.notes.add(f"no sentence of section {sec.sid} shares {MULTI_SHARED_TERMS} terms with one of "
                         f"{other.sid}")
        ledger.exhausted.add((sec.sid, "multi"))
        return None
    return [(sec, free[-best[1]]), (other, theirs[-best[2]])]
