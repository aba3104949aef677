"""An audited junk rate for a question set: a seeded random sample read by a person, an exact interval.

The checks of ``ragexam generate`` say how many questions *passed*; only a person says how many are *right*.  An
audit asks a person for a small, random part of that work:

1. **The sample.**  ragexam draws it -- never the person: the set's questions (in file order) shuffled with
   ``numpy.random.default_rng(seed)`` (:func:`sample_order`), the first ``--sample`` of them (default 20, at most
   the set).  A larger ``--sample`` later extends the same order, so the sample stays a simple random one.
2. **The labels.**  Each sampled question is *good* (answerable from its evidence, the key correct, natural
   language that stands on its own) or *bad* with one reason of :data:`REASONS` (wrong key, not answerable from the
   evidence, vague, broken language, fragment as key, not a question) -- in the browser (``ragexam serve --review
   QA``, the audit page) or on the command line (``ragexam review audit QA``: interactive on a terminal, or a sheet
   written with ``--sheet`` and read back with ``--labels``).
3. **The estimate.**  With ``x`` bad among the first ``n`` sampled questions (labels are counted in the sample's
   order up to the first question without one, so a skipped question cannot bias it; a label after such a gap is
   kept but not counted, and said so), the set of ``N`` questions holds between ``L`` and ``U`` bad ones with 95 %
   confidence -- the exact, finite-population (hypergeometric) interval of
   :func:`ragexam.stats.hypergeometric.hypergeometric_interval` -- and its junk rate is ``x / n`` in
   ``[L / N, U / N]``: ``junk 15% [6–31%], 20 of 60 audited``.

**Where it is kept.**  In a sidecar beside the set, ``qa.audit.json`` for ``qa.jsonl`` (format
:data:`AUDIT_FORMAT`), keyed by the SHA-256 of the set file -- the hash ``ragexam run`` records as the dataset's
``qa_sha256``.  A set edited since (another byte) is **no longer audited**: its status says so, and the next
``review audit`` draws a new sample, carrying over the labels of sampled questions whose question, key and
evidence are unchanged (each label keeps the hash of what was read, :func:`record_sha256`).  Every change is
written under the lock the review sheet uses and renamed into place; the set's card (``qa.card.json``), when
there is one, gets the status as its ``audit`` block.

**Where it shows.**  :func:`audit_status` is the one reader: the card, the review pages of ``ragexam serve``,
``review apply``'s output, ``ragexam check --max-junk`` and the dataset card of every run and report made on the
set (:func:`dataset_audit`) all show :meth:`AuditStatus.text`; a set nobody audited says ``not audited``.

``review apply`` writes a sidecar for the set it writes, derived from this audit and the review
(:mod:`ragexam.questions.risk`, :class:`DerivedAudit`).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from ragexam import fmt
from ragexam.errors import InputError
from ragexam.stats.hypergeometric import FiniteInterval, hypergeometric_interval

from ragexam.types import JsonValue

if TYPE_CHECKING:  # pragma: no cover
    from ragexam.storage.summary import DatasetAudit

__all__ = ["AUDIT_FORMAT", "REASONS", "DEFAULT_SAMPLE", "DEFAULT_SEED", "Label", "PendingBound", "DerivedAudit",
           "AuditFile",
           "AuditStatus", "audit_path", "set_sha256", "record_sha256", "sample_order", "read_audit", "write_audit",
           "audit_status", "dataset_audit", "reason_of", "label_of", "NOT_AUDITED", "AUDITED", "STALE", "REVIEWED"]

AUDIT_FORMAT = "ragexam-audit/1"
DEFAULT_SAMPLE = 20
DEFAULT_SEED = 12345
#: the reasons a question is bad: code -> (key on the audit page and the terminal, English, Korean)
REASONS: Dict[str, Tuple[str, str, str]] = {
    "wrong_key": ("1", "wrong key", "정답이 틀림"),
    "not_answerable": ("2", "not answerable from the evidence", "근거로 답할 수 없음"),
    "vague": ("3", "vague", "모호함"),
    "broken_language": ("4", "broken language", "문장이 어색하거나 깨짐"),
    "fragment_key": ("5", "fragment as key", "정답이 문장 조각"),
    "not_a_question": ("6", "not a question", "질문이 아님"),
}
GOOD_KEY = "g"
NOT_AUDITED, AUDITED, STALE, REVIEWED = "not_audited", "audited", "stale", "reviewed"
_GOOD_WORDS = ("good", "g", "ok", "yes", "y", "좋음", "양호", "정상")
_BAD_WORDS = ("bad", "b", "junk", "no", "n", "나쁨", "불량")
_MAX_BYTES = 64 * 2**20
PathLike = Union[str, Path]


def _beside(qa: PathLike, suffix: str) -> Path:
    p = Path(qa)
    stem = p.name[:-len(p.suffix)] if p.suffix else p.name
    return p.with_name(stem + suffix)


def audit_path(qa: PathLike) -> Path:
    """The audit sidecar of the set ``qa``: ``qa.audit.json`` beside ``qa.jsonl``."""
    return _beside(qa, ".audit.json")


def set_sha256(qa: PathLike) -> str:
    """SHA-256 of the set file's bytes (what ``ragexam run`` records as ``qa_sha256``)."""
    h = hashlib.sha256()
    with open(qa, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def record_sha256(rec: Mapping[str, Any]) -> str:
    """A short hash of what a person reads of a question: question, key, evidence, answerable."""
    seen = [rec.get("question"), rec.get("ground_truth"), rec.get("evidence") or [], rec.get("answerable", True)]
    return hashlib.sha256(json.dumps(seen, ensure_ascii=False).encode("utf-8")).hexdigest()[:16]


def sample_order(query_ids: Sequence[str], seed: int) -> List[str]:
    """The set's ids shuffled with ``numpy.random.default_rng(seed)``: the audit sample is a prefix of it."""
    import numpy as np

    perm = np.random.default_rng(int(seed)).permutation(len(query_ids))
    return [query_ids[int(i)] for i in perm]


def _loose(text: str) -> str:
    """``text`` lower-cased without spaces, underscores nor the subject particle of a Korean word before a space
    (``정답이 틀림`` and ``정답 틀림`` are one reason)."""
    return re.sub(r"[\s_]+", "", re.sub(r"(?<=[가-힣])[이가](?=\s)", "", str(text).strip().lower()))


def reason_of(value: str, *, file: Optional[str] = None, line: Optional[int] = None) -> str:
    """A reason code from its code, key (``1``-``6``) or its English or Korean words (the words the audit pages
    show, :data:`REASONS`; spaces and a Korean subject particle aside); InputError otherwise."""
    v = _loose(value)
    for code, (key, en, ko) in REASONS.items():
        if v and v in (_loose(code), key, _loose(en), _loose(ko)):
            return code
    raise InputError(f"received {value!r}; expected a reason: " + ", ".join(
        f"{key} {code} ({en} / {ko})" for code, (key, en, ko) in REASONS.items()), source=file, line=line,
        field="reason")


def label_of(value: str, *, file: Optional[str] = None, line: Optional[int] = None) -> Optional[str]:
    """``good``, ``bad`` or ``None`` (empty) from a label cell; InputError otherwise."""
    v = str(value).strip().lower()
    if not v:
        return None
    if v in _GOOD_WORDS:
        return "good"
    if v in _BAD_WORDS:
        return "bad"
    raise InputError(f"received {value!r}; expected good or bad (also: {', '.join(_GOOD_WORDS[2:] + _BAD_WORDS[2:])})"
                     " or empty", source=file, line=line, field="label")


@dataclass(frozen=True)
class Label:
    """One sampled question read by a person: ``good``, or ``bad`` with a :data:`REASONS` code."""

    query_id: str
    label: str
    reason: Optional[str] = None
    note: str = ""
    record_sha256: str = ""


@dataclass(frozen=True)
class PendingBound:
    """The bad questions a reviewed set may still hold (:func:`ragexam.questions.risk.pending_bound`): at most
    ``bad_high`` of its ``accepted + pending`` questions, by ``method``; ``rejected`` and ``dropped`` were left
    out.  ``audited``: the reviewed set had audited labels; without them nothing bounds the pending questions' junk
    (``bad_high`` is then all of them, and no rate is a bound: :attr:`known`).  ``exact``: the audit labelled every
    question of the set, so ``bad_high`` is a count, not a 95% bound."""

    accepted: int
    pending: int
    rejected: int
    dropped: int
    bad_high: int
    method: str
    audited: bool = True
    exact: bool = False

    @property
    def n_written(self) -> int:
        return self.accepted + self.pending

    @property
    def known(self) -> bool:
        """Whether the written set's junk is bounded: every question read by a person, or an audit's labels."""
        return self.pending == 0 or self.audited

    @property
    def rate_high(self) -> float:
        return self.bad_high / self.n_written if self.n_written else 0.0

    def parts(self, ko: bool = False) -> str:
        """``40 accepted by a person, 10 not reviewed`` (a part of 0 questions left out)."""
        words = (("사람이 승인", "검토 안 됨") if ko else ("accepted by a person", "not reviewed"))
        return ", ".join((f"{w} {n}개" if ko else f"{n} {w}") for n, w in zip((self.accepted, self.pending), words)
                         if n)


@dataclass(frozen=True)
class DerivedAudit:
    """The audit of a set written by ``review apply``: the audited ``source`` set (its hash and its status's text)
    and what the review left unread (``bound``)."""

    source: str
    source_sha256: str
    source_text: str
    bound: PendingBound


@dataclass
class AuditFile:
    """The sidecar's content (module docstring)."""

    set_name: str
    set_sha256: str
    n_set: int
    seed: int
    sample: List[str]
    labels: Dict[str, Label] = field(default_factory=dict)
    derived: Optional[DerivedAudit] = None

    def to_dict(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"format": AUDIT_FORMAT, "set": self.set_name, "set_sha256": self.set_sha256,
                               "n_set": self.n_set, "seed": self.seed, "sample": list(self.sample),
                               "labels": [asdict(self.labels[q]) for q in self.sample if q in self.labels]}
        if self.derived is not None:
            out["derived"] = asdict(self.derived)
        return out

    def counted(self) -> Tuple[List[Label], int]:
        """The labels counted (those of the sample's first questions, up to the first one without a label) and how
        many more were given after that gap (kept, not counted)."""
        counted: List[Label] = []
        for qid in self.sample:
            if qid not in self.labels:
                break
            counted.append(self.labels[qid])
        return counted, sum(1 for q in self.sample if q in self.labels) - len(counted)


def _bad_file(path: Path, why: str, field_: Optional[str] = None) -> InputError:
    return InputError(f"{why}; expected an audit file written by ragexam ({AUDIT_FORMAT}). Fix: delete it and audit "
                      "the set again", source=str(path), field=field_)


def _label(d: JsonValue, path: Path) -> Label:
    if not isinstance(d, dict) or not isinstance(d.get("query_id"), str) or d.get("label") not in ("good", "bad"):
        raise _bad_file(path, f"received the label {d!r}", "labels")
    reason = d.get("reason")
    if (d["label"] == "bad") != (reason in REASONS):
        raise _bad_file(path, f"received the label {d!r} (a bad label needs one reason of "
                              f"{', '.join(REASONS)}; a good one none)", "labels")
    return Label(d["query_id"], d["label"], reason, str(d.get("note") or ""), str(d.get("record_sha256") or ""))


def _derived(d: Dict[str, Any]) -> DerivedAudit:
    bound = dict(d["bound"])
    # a sidecar written before ``audited`` was kept: its source was audited unless its text says it was not
    bound.setdefault("audited", not str(d.get("source_text", "")).startswith("not audited"))
    return DerivedAudit(**dict(d, bound=PendingBound(**bound)))


def read_audit(qa: PathLike) -> Optional[AuditFile]:
    """The sidecar of ``qa`` (``None`` when there is none); InputError naming the file and field when it cannot
    be read."""
    from ragexam.storage.readback import read_json

    path = audit_path(qa)
    if not path.is_file():
        return None
    d = read_json(path, max_bytes=_MAX_BYTES, fix="delete it and audit the set again")  # size and nesting bounded
    if not isinstance(d, dict) or d.get("format") != AUDIT_FORMAT:
        raise _bad_file(path, f"received format {d.get('format') if isinstance(d, dict) else d!r}", "format")
    try:
        sample = [str(q) for q in d["sample"]]
        labels = {lab.query_id: lab for lab in (_label(x, path) for x in d.get("labels") or [])}
        derived = _derived(d["derived"]) if d.get("derived") else None
        return AuditFile(str(d["set"]), str(d["set_sha256"]), int(d["n_set"]), int(d["seed"]), sample, labels,
                         derived)
    except (KeyError, TypeError, ValueError) as err:
        raise _bad_file(path, f"a field is missing or has the wrong type ({err})") from None


def write_audit(qa: PathLike, audit: AuditFile) -> Path:
    """Write the sidecar of ``qa`` (temporary file + rename) and the set card's ``audit`` block."""
    from ragexam.storage.runfolder import write_text

    path = audit_path(qa)
    write_text(path, json.dumps(audit.to_dict(), ensure_ascii=False, indent=1) + "\n")
    _update_card(Path(qa), status_of(audit, audit.set_sha256, path))
    return path


def _update_card(qa: Path, status: "AuditStatus") -> None:
    from ragexam.storage.runfolder import write_text

    card = _beside(qa, ".card.json")  # the card generate writes (questions.output.side_paths)
    if not card.is_file():
        return
    from ragexam.storage.readback import read_json

    try:
        d = read_json(card)
    except InputError:
        return  # a card that cannot be read is left as it is (review apply says so when it needs it)
    if isinstance(d, dict):
        d["audit"] = status.to_dict()
        write_text(card, json.dumps(d, ensure_ascii=False, indent=2, allow_nan=False) + "\n")


# -- the status ------------------------------------------------------------------------------------------------
def _pct(x: float) -> str:
    return fmt.percent(x)


@dataclass(frozen=True)
class AuditStatus:
    """What is known of a set's junk rate (module docstring): ``state`` :data:`NOT_AUDITED`, :data:`AUDITED` (with
    the ``interval``; ``n_sample`` drawn, ``out_of_order`` labels not counted), :data:`STALE` (audited, then the set
    changed) or :data:`REVIEWED` (written by ``review apply``: ``derived``)."""

    state: str
    n_set: int = 0
    interval: Optional[FiniteInterval] = None
    n_sample: int = 0
    out_of_order: int = 0
    reasons: Tuple[Tuple[str, int], ...] = ()
    derived: Optional[DerivedAudit] = None
    file: str = ""

    @property
    def n_audited(self) -> int:
        return self.interval.n if self.interval is not None else 0

    @property
    def junk_high(self) -> Optional[float]:
        """The 95 % upper bound of the set's junk rate (``None``: nothing is known)."""
        if self.state == AUDITED and self.n_audited:
            return self.interval.high  # type: ignore[union-attr]
        if self.state == REVIEWED and self.derived is not None and self.n_set and self.derived.bound.known:
            return self.derived.bound.bad_high / self.n_set
        return None

    def text(self, lang: str = "en") -> str:
        """One line: ``junk 15% [6–31%], 20 of 60 audited``, ``not audited``, ... (``lang``: ``en`` or ``ko``)."""
        ko = lang == "ko"
        iv = self.interval
        if self.state == AUDITED and iv is not None and iv.n == iv.population:
            return (f"불량 {_pct(iv.estimate or 0.0)}, {iv.population}개 모두 검수" if ko else
                    f"junk {_pct(iv.estimate or 0.0)}, {iv.n} of {iv.population} audited (every question)")
        if self.state == AUDITED and iv is not None and iv.n:
            rate = f"{_pct(iv.estimate or 0.0)} [{_pct(iv.low)}–{_pct(iv.high)}]"
            text = (f"불량 {rate}, {iv.population}개 중 {iv.n}개 검수" if ko else
                    f"junk {rate}, {iv.n} of {iv.population} audited")
            if iv.n < self.n_sample:
                text += f" (표본 {self.n_sample}개 중 {iv.n}개까지)" if ko else f" (so far: {iv.n} of the {self.n_sample} sampled)"
            if self.out_of_order:
                text += (f"; 순서를 건너뛴 {self.out_of_order}개는 세지 않음" if ko else
                         f"; {self.out_of_order} labelled after an unlabelled one not counted")
            return text
        if self.state == AUDITED:
            return (f"검수 안 됨 (표본 {self.n_sample}개를 뽑았고 아직 읽지 않음)" if ko else
                    f"not audited (a sample of {self.n_sample} drawn, none labelled yet)")
        if self.state == STALE:
            return (f"검수 무효: {self.n_audited}개를 검수한 뒤 세트가 바뀌었습니다 (다시 검수하세요)" if ko else
                    f"not audited: the set changed after {self.n_audited} of its questions were audited (audit it "
                    "again)")
        if self.state == REVIEWED and self.derived is not None:
            return self._derived_text(ko)
        return "검수 안 됨" if ko else "not audited"

    def _derived_text(self, ko: bool) -> str:
        d = self.derived
        assert d is not None  # only called for REVIEWED
        b = d.bound
        if b.pending == 0:
            return (f"사람이 모든 질문을 승인함 ({b.accepted}개)" if ko else
                    f"every question accepted by a person ({b.accepted} of {b.accepted})")
        if not b.audited:  # no labels: nothing bounds the junk of the questions nobody reviewed
            return (f"검수 안 됨 (review apply: {b.parts(ko)}; {d.source}도 검수 안 됨)" if ko else
                    f"not audited (review apply: {b.parts()}; {d.source} not audited either)")
        high = _pct(b.bad_high / self.n_set) if self.n_set else "–"
        if ko:
            return f"불량 최대 {high}: {b.parts(ko)} ({d.source} 검수 기준)"
        return f"junk at most {high}: {b.parts()} ({d.source}: {d.source_text})"

    def to_dict(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"state": self.state, "text": self.text(), "text_ko": self.text("ko"),
                               "n_set": self.n_set, "n_audited": self.n_audited, "n_sample": self.n_sample,
                               "junk_high": self.junk_high}
        if self.interval is not None and self.interval.n:
            iv = self.interval
            out.update(n_bad=iv.bad, junk=iv.estimate, junk_low=iv.low, bad_low=iv.low_count, bad_high=iv.high_count,
                       confidence=iv.confidence, signature=iv.signature)
        if self.reasons:
            out["reasons"] = dict(self.reasons)
        if self.out_of_order:
            out["out_of_order"] = self.out_of_order
        if self.derived is not None:
            out["derived"] = asdict(self.derived)
        if self.file:
            out["file"] = self.file
        return out


def status_of(audit: Optional[AuditFile], sha256: Optional[str], path: Optional[Path] = None) -> AuditStatus:
    """The status of a set whose file hashes to ``sha256``, given its sidecar ``audit``."""
    file = str(path) if path is not None else ""
    if audit is None:
        return AuditStatus(NOT_AUDITED)
    counted, skipped = audit.counted()
    bad = [lab for lab in counted if lab.label == "bad"]
    interval = hypergeometric_interval(len(bad), len(counted), audit.n_set)
    if sha256 is not None and audit.set_sha256 != sha256:
        return AuditStatus(STALE, audit.n_set, interval, len(audit.sample), file=file)
    if audit.derived is not None and not counted:  # a set review apply wrote, not audited itself (yet)
        return AuditStatus(REVIEWED, audit.n_set, None, derived=audit.derived, file=file)
    reasons: Dict[str, int] = {}
    for lab in bad:
        reasons[str(lab.reason)] = reasons.get(str(lab.reason), 0) + 1
    return AuditStatus(AUDITED, audit.n_set, interval, len(audit.sample), skipped,
                       tuple(sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))), file=file)


def audit_status(qa: PathLike, sha256: Optional[str] = None) -> AuditStatus:
    """The one reader of a set's audit (module docstring): the sidecar of ``qa`` against the set's current hash
    (``sha256`` when the caller has it)."""
    path = Path(qa)
    if sha256 is None and path.is_file():
        sha256 = set_sha256(path)
    return status_of(read_audit(path), sha256, audit_path(path))


def dataset_audit(qa: Optional[str], qa_sha256: Optional[str], recorded: Optional["DatasetAudit"] = None
                  ) -> Optional["DatasetAudit"]:
    """The audit on a run's dataset card (the one function the run, its console card and its HTML report read it
    through): the sidecar beside the set file the run read, when it is still there and audits the very bytes the run
    read (``qa_sha256``); else what the run ``recorded``; ``None`` for a run of a version before audits whose set
    is gone."""
    from ragexam.storage.summary import DatasetAudit

    if qa and qa_sha256 and Path(qa).is_file():
        try:
            return DatasetAudit.from_dict(status_of(read_audit(qa), qa_sha256, audit_path(qa)).to_dict())
        except InputError:
            pass  # an unreadable sidecar: what the run recorded
    return recorded


def with_label(audit: AuditFile, label: Label) -> AuditFile:
    """``audit`` with ``label`` set (its question must be in the sample: the person never picks)."""
    if label.query_id not in audit.sample:
        raise InputError(f"{label.query_id!r} is not in the audit's sample; expected one of the {len(audit.sample)} "
                         "questions ragexam drew (the sample is random, never picked)", field="query_id")
    if label.label not in ("good", "bad") or (label.label == "bad") != (label.reason in REASONS):
        raise InputError(f"received {label.label!r} with reason {label.reason!r}; expected good (no reason) or bad "
                         f"with one of {', '.join(REASONS)}", field="reason")
    return replace(audit, labels=dict(audit.labels, **{label.query_id: label}))
