"""The results ``ragexam serve`` may show: the records of the run history and the run or score folders named on the
command line -- nothing else.

A result is reached by a key, never by a path: ``f<N>`` is the N-th folder named on the command line, ``h:<id>``
the record ``<id>`` of the history (an id the history lists).  A loaded result is kept (a few, least recently used
first out; a folder is read again when its ``summary.json`` / ``score.json`` changed), so the pages of a run of
5,000 questions do not read it again for every page.

A run is shown through the same :class:`~ragexam.report.views.RunView` as the static report.  A score is its
:class:`~ragexam.storage.score_summary.ScoreSummary` plus, for a score folder, what only the folder holds: each answer's
text (``per_answer.csv``) and the judge's reasoning (``judgments.jsonl``).  Question texts and reference answers
come from the question set the run or score names (``with_ground_truth``, as ``ragexam report`` does) when it is
a bundled set or an existing file.
"""

from __future__ import annotations

import csv
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ragexam.errors import InputError
from ragexam.report.views import RunView
from ragexam.storage.history import History, RunPage
from ragexam.storage.readback import parse_json
from ragexam.storage.runfolder import RunData
from ragexam.storage.score_summary import ScoreSummary

__all__ = ["Results", "Loaded", "AnswerDetail", "Asked", "JudgeVerdict", "FOLDER", "RECORD", "same_folder", "answers_for_run",
           "read_answer_details"]

FOLDER, RECORD = "f", "h:"
#: results kept loaded
KEEP = 6


@dataclass
class JudgeVerdict:
    """One judge metric's verdict on one answer (``per_answer.csv``), with the reasoning of its judgments."""

    metric: str
    status: str = ""
    score: str = ""
    label: str = ""
    reason: str = ""
    reasoning: List[str] = field(default_factory=list)


@dataclass
class AnswerDetail:
    """What a score folder holds about one answer beyond the score's JSON."""

    answer: Optional[str] = None
    judged: List[JudgeVerdict] = field(default_factory=list)
    #: a traced answer's exam question (``per_answer.csv``'s ``exam_id``), when it matched one
    exam_id: str = ""


@dataclass
class Asked:
    """The question an answer of a score answers, as its page shows it: the question as asked (a traced answer's
    own, or the set's question of its id), the question set's question it is (by id, or a traced question matched
    to it: ``match`` ``exact`` / ``near``) and, when the text is not at hand, why (``missing``: ``(strings key,
    arguments)`` each)."""

    text: Optional[str] = None
    exam: Any = None  # data.schema.Question
    exam_id: str = ""
    match: str = ""
    #: a traced answer of a score with a question set (matched to the set's questions, or to none)
    against_set: bool = False
    missing: List[Tuple[str, Dict[str, str]]] = field(default_factory=list)


@dataclass
class Loaded:
    """A run or score as the pages show it (``view`` for a run; ``score`` for a score)."""

    key: str
    label: str
    data: RunData
    view: Optional[RunView] = None
    score: Optional[ScoreSummary] = None
    details: Dict[Tuple[str, str], AnswerDetail] = field(default_factory=dict)
    questions: Dict[str, Any] = field(default_factory=dict)  # query_id -> data.schema.Question
    #: query_id -> the question a traced answer carries (its answers file; analysis/answers/traffic.py)
    traced: Dict[str, str] = field(default_factory=dict)
    #: why the question set / the answers file is not at hand: ``(strings key, arguments)`` each
    unavailable: List[Tuple[str, Dict[str, str]]] = field(default_factory=list)
    stamp: Any = None
    #: the run's view with a score's answers and attribution: ``{score key: (the loaded score, view)}``
    scored: Dict[str, Tuple["Loaded", RunView]] = field(default_factory=dict)

    @property
    def is_score(self) -> bool:
        return self.score is not None

    @property
    def run_id(self) -> str:
        return self.data.run_id

    def asked(self, pipeline: str, query_id: str) -> Asked:
        """The question of the answer ``(pipeline, query_id)`` of a score (:class:`Asked`)."""
        own = self.traced.get(query_id)
        by_id = self.questions.get(query_id)
        if by_id is not None:  # an answer to a question of the set is joined to it by id, as the score joined it
            return Asked(by_id.question, by_id, query_id)
        detail = self.details.get((pipeline, query_id))
        exam_id, match = (detail.exam_id if detail is not None else ""), ""
        matching = self.score.segments.exam if self.score is not None and self.score.segments else None
        for m in matching.matches if matching is not None else []:
            if (own is not None and m.question == own) or (own is None and exam_id and m.exam_id == exam_id):
                exam_id, match = m.exam_id, m.match
                break
        asked = Asked(own, self.questions.get(exam_id) if exam_id else None, exam_id, match, own is not None and matching is not None)
        if own is None:
            asked.missing = list(self.unavailable) or [("score.question_in_neither", {"query_id": query_id})]
        return asked


class Results:
    """The folders named on the command line and the history (module docstring)."""

    def __init__(self, folders: Sequence[Any] = (), history: Any = None) -> None:
        self.folders = [Path(p) for p in folders]
        self.history = History(history)
        self._kept: "OrderedDict[str, Loaded]" = OrderedDict()
        self._pages: "OrderedDict[Tuple, RunPage]" = OrderedDict()
        self._lock = threading.Lock()
        self._loading: Dict[str, threading.Lock] = {}

    # -- which keys exist ---------------------------------------------------------------------------------------

    def folder_keys(self) -> List[Tuple[str, Path]]:
        return [(f"{FOLDER}{i}", p) for i, p in enumerate(self.folders, 1)]

    def label(self, key: str) -> str:
        """How a key is named on a page: the folder's path, or the record's id."""
        if key.startswith(RECORD):
            return key[len(RECORD):]
        folder = self._folder(key)
        return str(folder) if folder is not None else key

    def _folder(self, key: str) -> Optional[Path]:
        if key.startswith(FOLDER) and key[len(FOLDER):].isdigit():
            i = int(key[len(FOLDER):])
            if 1 <= i <= len(self.folders):
                return self.folders[i - 1]
        return None

    def key_of_record(self, run_id: str) -> str:
        return RECORD + run_id

    def known(self, key: str) -> bool:
        """Whether ``key`` names a folder of the command line or a record the history lists (its exact id: a
        prefix or ``latest`` is not resolved); an :class:`InputError` when the history cannot be read."""
        if self._folder(key) is not None:
            return True
        rid = key[len(RECORD):]
        return key.startswith(RECORD) and bool(rid) and self.history.has(rid)

    def kept_language(self) -> Optional[str]:
        """``ko`` when a loaded run or score has Hangul in its questions or dataset, ``en`` when one has none,
        ``None`` when none is loaded yet."""
        from ragexam.serve.i18n import has_hangul

        with self._lock:
            kept = list(self._kept.values())
        for loaded in kept:
            if loaded.view is not None:
                texts = [loaded.view.summary.dataset_label] + [e.question.question or ""
                                                               for e in loaded.view.missed()[:50]]
            else:
                texts = [str(q.question) for q in list(loaded.questions.values())[:50]]
                texts += list(loaded.traced.values())[:50]
            return "ko" if any(has_hangul(x) for x in texts) else "en"
        return None

    def page(self, **query: Any) -> RunPage:
        """A page of the history's records (:meth:`~ragexam.storage.history.History.page_runs`), kept while the
        history's files are unchanged (the same page asked again reads nothing)."""
        key = (tuple(sorted(query.items())), self._history_stamp())
        with self._lock:
            page = self._pages.get(key)
        if page is None:
            page = self.history.page_runs(**query)
            with self._lock:
                self._pages[key] = page
                while len(self._pages) > 64:
                    self._pages.popitem(last=False)
        return page

    def _history_stamp(self) -> Tuple:
        """What changes when a record is written or deleted: the database's and its write-ahead log's size and
        time."""
        out = []
        for suffix in ("", "-wal"):
            try:
                st = Path(str(self.history.path) + suffix).stat()
                out.append((st.st_ino, st.st_mtime_ns, st.st_size))
            except OSError:
                out.append(None)
        return tuple(out)

    # -- loading ------------------------------------------------------------------------------------------------

    def load(self, key: str) -> Loaded:
        """The run or score of ``key``, loaded once (``KeyError`` for a key no folder or record has;
        :class:`InputError` when its files cannot be read)."""
        if not self.known(key):
            raise KeyError(key)
        stamp = self._stamp(key)
        with self._lock:
            kept = self._kept.get(key)
            if kept is not None and kept.stamp == stamp:
                self._kept.move_to_end(key)
                return kept
            gate = self._loading.setdefault(key, threading.Lock())
        with gate:  # one loader per key; the others wait for it
            with self._lock:
                kept = self._kept.get(key)
                if kept is not None and kept.stamp == stamp:
                    return kept
            loaded = self._read(key)
            loaded.stamp = stamp
            with self._lock:
                self._kept[key] = loaded
                self._kept.move_to_end(key)
                while len(self._kept) > KEEP:
                    self._kept.popitem(last=False)
        return loaded

    def _stamp(self, key: str) -> Any:
        folder = self._folder(key)
        if folder is None:
            return None  # a record never changes under its id
        stats = []
        for name in ("summary.json", "score.json", "per_question.csv", "per_answer.csv", "judgments.jsonl"):
            try:
                st = (folder / name).stat()
                stats.append((name, st.st_ino, st.st_mtime_ns, st.st_size))
            except OSError:
                pass
        return tuple(stats)

    def _read(self, key: str) -> Loaded:
        from ragexam.storage.runfolder import read_folder

        folder = self._folder(key)
        data = read_folder(folder) if folder is not None else self.history.get(key[len(RECORD):])
        loaded = Loaded(key, self.label(key), data)
        if data.is_score:
            loaded.score = data.score
            if folder is not None:
                loaded.details = read_answer_details(folder, loaded.score)
            _read_questions(loaded)
        else:
            from ragexam.analysis.gating.history import with_ground_truth

            summary = data.summary  # from ragexam-run/2 on, a missed question carries its reference answer
            if summary.format.split(".")[0] == "ragexam-run/1" and any(
                    e.ground_truth is None for es in summary.missed.values() for e in es):
                summary = with_ground_truth(summary)
            loaded.view = RunView.of(summary, data.per_question)
        return loaded

    # -- how results relate -------------------------------------------------------------------------------------

    def scores_of(self, run: Loaded, problems: Optional[List[str]] = None) -> List[str]:
        """Keys of the scores of ``run``: named score folders whose ``settings.run`` is the run's folder, and
        history scores recorded with ``scored_run`` = its id (a history that cannot be read adds its reason to
        ``problems``, when given, and no key)."""
        keys = []
        run_folder = self._folder(run.key)
        for key, folder in self.folder_keys():
            if key == run.key or not (folder / "score.json").is_file():
                continue
            try:
                named = self.load(key).score.used_settings.get("run")
            except (InputError, KeyError):
                continue
            if named and run_folder is not None and same_folder(named, run_folder):
                keys.append(key)
        if run.run_id:
            try:
                keys += [self.key_of_record(e.run_id) for e in self.page(scored_run=run.run_id, limit=20).entries]
            except InputError as err:
                if problems is None:
                    raise
                problems.append(str(err))
        return keys

    def with_score(self, run: Loaded, scores: Optional[List[str]] = None) -> Tuple[RunView, Optional[str]]:
        """The run's view with the stage attribution, judge and answers of its first score of ``scores`` (default:
        :meth:`scores_of`) and that score's key, or the run's own view when it has no score (kept with the run
        while the score is unchanged)."""
        view = run.view
        for key in self.scores_of(run, []) if scores is None else scores:
            try:
                score = self.load(key)
            except (InputError, KeyError):
                continue
            kept = run.scored.get(key)
            if kept is None or kept[0] is not score:
                att = score.score.attribution
                kept = run.scored[key] = (score, RunView(view.summary, view.rows, answers_for_run(score),
                                                         score.score.judge, att.by_type if att else {},
                                                         list(view.notes)))
            return kept[1], key
        return view, None


def same_folder(named: str, folder: Path) -> bool:
    """Whether the path ``named`` (a score's ``settings.run``) is ``folder``."""
    try:
        return Path(named).resolve() == folder.resolve()
    except OSError:
        return False


def _read_questions(loaded: Loaded) -> None:
    """A score's questions: those of the set it names (a bundled set or an existing file) and the questions its
    traced answers carry (the answers file it names, when it is at hand), and why either is not."""
    settings = loaded.score.used_settings
    qa, answers = settings.get("qa") or loaded.score.dataset.qa, settings.get("answers")
    if isinstance(qa, str) and qa:
        loaded.questions, why = _questions(qa)
        if why:
            loaded.unavailable.append(why)
    if isinstance(answers, str) and answers:
        loaded.traced, why = _traced(answers, {v.query_id for v in loaded.score.verdicts().values()})
        if why:
            loaded.unavailable.append(why)


def _questions(qa: str) -> Tuple[Dict[str, Any], Optional[Tuple[str, Dict[str, str]]]]:
    """The questions of the set ``qa`` (a bundled set or an existing file), else none and why."""
    from ragexam.data.datasets import is_bundled
    from ragexam.data.loaders import load_qa

    if not (is_bundled(qa) or Path(qa).is_file()):
        return {}, ("score.set_not_at_hand", {"qa": qa})
    try:
        return {q.query_id: q for q in load_qa(qa)}, None
    except InputError as err:
        return {}, ("score.set_unreadable", {"qa": qa, "error": str(err)})


def _traced(path: str, ids: set) -> Tuple[Dict[str, str], Optional[Tuple[str, Dict[str, str]]]]:
    """``{query_id: question}`` of the answers of ``ids`` in the answers file ``path`` that carry their question,
    else none and why."""
    from ragexam.analysis.answers.files import iter_answers

    if not Path(path).is_file():
        return {}, ("score.answers_not_at_hand", {"answers": path})
    out: Dict[str, str] = {}
    try:
        for rec in iter_answers(path):
            if rec.question is not None and rec.query_id in ids:
                out.setdefault(rec.query_id, rec.question)
    except InputError as err:
        return {}, ("score.answers_unreadable", {"answers": path, "error": str(err)})
    return out, None


def answers_for_run(score: Loaded) -> Dict[str, Dict[str, Dict[str, Any]]]:
    """``{pipeline: {query_id: entry}}`` (the report's ``answers``) from a score: the answer text (a folder),
    the verdict, the stage and the judge's reasoning on correctness."""
    from ragexam.metrics.judge.builtin.abstention import METRIC as ABSTENTION
    from ragexam.metrics.judge.builtin.answer_correctness import METRIC as CORRECTNESS

    out: Dict[str, Dict[str, Dict[str, Any]]] = {}
    for (pipeline, qid), v in score.score.verdicts().items():
        entry: Dict[str, Any] = {"stage": v.label + (f" ({v.reason})" if v.reason else ""),
                                 "verdict": v.verdict or None}
        detail = score.details.get((pipeline, qid))
        if detail is not None:
            entry["answer"] = detail.answer
            main = next((j for j in detail.judged if j.metric in (CORRECTNESS.name, ABSTENTION.name)), None)
            if main is not None and main.reasoning:
                entry["reasoning"] = main.reasoning[0]
        out.setdefault(pipeline, {})[qid] = entry
    return out


def read_answer_details(folder: Path, score: ScoreSummary) -> Dict[Tuple[str, str], AnswerDetail]:
    """Each answer's text and judge verdicts from a score folder's ``per_answer.csv``, with the reasoning of its
    judgments (``judgments.jsonl``); a missing file gives none (the page says so)."""
    metrics = list(dict.fromkeys(m for ms in (score.judge.summary.values() if score.judge else []) for m in ms))
    reasoning: Dict[Tuple[str, str], List[str]] = {}
    jpath = folder / "judgments.jsonl"
    if jpath.is_file():
        with jpath.open(encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                j = parse_json(line, source=str(jpath), line=n, fix="expected one judgment per line")
                why = (j.get("details") or {}).get("reasoning") if isinstance(j, dict) else None
                if why:
                    reasoning.setdefault((str(j.get("item_id")), str(j.get("metric"))), []).append(str(why))
    out: Dict[Tuple[str, str], AnswerDetail] = {}
    apath = folder / "per_answer.csv"
    if not apath.is_file():
        return out
    with apath.open(encoding="utf-8-sig", newline="") as fh:
        for row in csv.DictReader(fh):
            pipeline, qid = row.get("pipeline") or "", row.get("query_id") or ""
            item = f"{qid} @ {pipeline}"
            judged = [JudgeVerdict(m, row.get(f"{m}_status") or "", row.get(f"{m}_score") or "",
                                   row.get(f"{m}_label") or "", row.get(f"{m}_reason") or "",
                                   reasoning.get((item, m), [])) for m in metrics if f"{m}_status" in row]
            out[(pipeline, qid)] = AnswerDetail(row.get("answer") or None, judged, row.get("exam_id") or "")
    return out
