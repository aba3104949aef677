"""What a generation writes: the question set, the rejects, the set's card and the review sheet.

For ``--out qa.jsonl`` (the stem ``qa``):

================  ==============================================================================
file              content
================  ==============================================================================
``qa.jsonl``      the question set, ragexam's QA format (``ragexam validate`` / ``ragexam run`` as
                  is); each record's ``metadata.generation`` is its verification record
``qa.rejects.jsonl``  one line per rejected candidate, failed call or unusable reply: ``reason``,
                  ``stage``, ``detail`` and what the model wrote
``qa.card.json``  the set's card: signature, corpus, coverage, mix target vs achieved, rejections
                  by reason, passes, why it stopped, calls/tokens/cost of this run, and its
                  ``audit`` (``not audited`` until a person audits a sample: :mod:`.audit`)
``qa.review.csv`` the review sheet (UTF-8 with BOM so spreadsheet programs read Korean): one row per
                  question, ``status`` ``pending``, with what the checks found (the answer check in
                  words, the critic's score, the reader's answer and its agreement with the key, who
                  checked); edit it and run ``ragexam review apply``.  A cell that
                  a spreadsheet would run as a formula gets a leading ``'`` (:func:`sheet_cell`)
================  ==============================================================================

Every file is written to a temporary name and renamed (nothing is left behind when writing fails), so a
killed run never leaves half a file.
The set and the rejects depend only on the corpus, the settings and the model's replies (no clock,
no counts of this run), so a resumed run writes them byte for byte as an uninterrupted one would.
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Union

from ragexam.questions.checks import REASONS, asked_type
from ragexam.questions.products import Candidate, Json, Ledger, Record
from ragexam.questions.prompts import DECLINE
from ragexam.questions.setup import Setup
from ragexam.storage.paths import In

__all__ = ["side_paths", "check_outputs", "write_outputs", "candidate_record", "reject_record", "build_card",
           "REVIEW_COLUMNS", "CARD_FORMAT", "DECLINE", "GenerateResult", "CHECK_WORDS", "checked_by_text",
           "sheet_cell", "read_cell", "review_cells"]

CARD_FORMAT = "ragexam-questions-card/1"
#: columns of the review sheet, in order
REVIEW_COLUMNS = ("query_id", "status", "type", "question", "ground_truth", "evidence", "relevant_doc_ids",
                  "overlap", "anchors", "answer_check", "critic", "reader_answer", "reader_agreement", "checked_by",
                  "note")
#: what the review sheet says of an answer check, by its method (ASCII punctuation: Korean Excel saves the sheet
#: as CP949, which has no em dash)
CHECK_WORDS = {"contained": "answer found in evidence - not checked for correctness",
               "skipped": "not checked (--skip-check faithfulness)", "human": "vouched for by the reviewer"}


@dataclass
class GenerateResult:
    """The set (``records``: QA records in output order), ``rejects`` (one record per rejected candidate,
    reply or call), the ``card`` and the ``signature``."""

    records: List[Record]
    rejects: List[Record]
    card: Record
    signature: str
    language: str
    corpus_source: Optional[str] = None
    #: the files :meth:`save` wrote (``{"qa", "rejects", "card", "review"}``; only ``rejects`` when no question
    #: was kept)
    written: Dict[str, Path] = field(default_factory=dict)

    @property
    def shortfall(self) -> int:
        """Questions missing to reach ``n``."""
        n = self.card["n_requested"]
        return max(0, (n if isinstance(n, int) else 0) - len(self.records))

    def save(self, out: Union[str, Path]) -> Dict[str, Path]:
        """Write the set and its side files (:func:`write_outputs`)."""
        self.written = write_outputs(self, out)
        return self.written


def side_paths(out: Union[str, Path]) -> Dict[str, Path]:
    """``{"qa", "rejects", "card", "review"}`` paths for the set file ``out``."""
    p = Path(out)
    stem = p.name[:-len(p.suffix)] if p.suffix else p.name
    return {"qa": p, "rejects": p.with_name(stem + ".rejects.jsonl"), "card": p.with_name(stem + ".card.json"),
            "review": p.with_name(stem + ".review.csv")}


def check_outputs(out: Union[str, Path], inputs: Sequence[In] = ()) -> Dict[str, Path]:
    """Check every output path (the set and its side files) before any work: each can be written and none is one
    of ``inputs`` (:class:`ragexam.storage.paths.In`: the corpus, the prompt file), by the one output-path rule
    :func:`ragexam.storage.paths.check_outputs`; :class:`~ragexam.errors.InputError` naming ``--out`` and the
    input otherwise."""
    from ragexam.storage.paths import Out, check_outputs as check_all

    paths = side_paths(out)
    check_all([Out(p, "--out" if k == "qa" else f"--out's {k} file") for k, p in paths.items()], inputs)
    return paths


def _write(path: Path, text: str) -> None:
    """Atomically (:func:`ragexam.storage.runfolder.write_text`), creating the folder."""
    from ragexam.storage.runfolder import write_text

    path.parent.mkdir(parents=True, exist_ok=True)
    write_text(path, text)


def _jsonl(rows: List[Record]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False, allow_nan=False) + "\n" for r in rows)


def candidate_record(gen: Setup, x: Candidate, query_id: str) -> Record:
    """The QA record of a kept candidate of the generation ``gen``, with its verification record in
    ``metadata.generation``."""
    g: Record = {"kind": x.kind, "model_type": x.model_type, "pass": x.pass_no, "call": x.call,
                         "candidate": x.cid, "sections": list(x.sections), "prompt": gen.prompts.label}
    if x.answerable:
        spans = []
        for loc in x.located:
            for o in loc.shown + loc.others:
                spans.append({"evidence": loc.index, "doc_id": o.doc_id, "start": o.start, "end": o.end,
                              "shown": o.doc_id in x.doc_ids})
        joined = [d for d in x.relevant if d not in {d2 for loc in x.located for d2 in loc.doc_ids}]
        g.update({"overlap": x.overlap, "overlap_unit": "kiwi" if gen.language == "ko" else "words",
                  "anchors": x.anchors, "style": x.style, "evidence_spans": spans, "joined_doc_ids": joined,
                  "answer_check": x.answer_check})
        unwrapped = [{"evidence": loc.index, "original": loc.unwrapped_from, "quoted": loc.text}
                     for loc in x.located if loc.unwrapped_from is not None]
        if unwrapped:
            g["unwrapped"] = unwrapped
        if x.cited:
            g["cited_sentences"] = list(x.cited)
        if x.critic:
            g["critic"] = x.critic
        if x.reader:
            g["reader"] = x.reader
        g["asks"] = asked_type(x.question)
        g["checks"] = list(gen.checks)
        record: Record = {"query_id": query_id, "question": x.question, "relevant_doc_ids": x.relevant,
                                  "evidence": [loc.text for loc in x.located], "ground_truth": x.answer,
                                  "type": x.type, "answerable": True}
    else:
        g.update({"ooc_check": x.ooc_check})
        record = {"query_id": query_id, "question": x.question, "ground_truth": DECLINE[gen.language],
                  "type": "out_of_corpus", "answerable": False}
    g["checked_by"] = {"model": gen.judge.model, "generator_itself": gen.checked_by_generator}
    g["review"] = "pending"
    record["metadata"] = {"generation": g}
    return record


def reject_record(x: Candidate) -> Record:
    """One line of the rejects file for a rejected candidate."""
    r = x.rejection
    assert r is not None  # only rejected candidates get here (internal invariant, not user input)
    out: Record = {"reason": r.reason, "stage": r.stage, "detail": r.detail, "kind": x.kind,
                           "pass": x.pass_no, "call": x.call, "cid": x.cid, "seq": list(x.seq),
                           "sections": list(x.sections)}
    if x.question or x.evidence or x.answer:
        out.update({"question": x.question, "answer": x.answer, "evidence": x.evidence, "model_type": x.model_type})
    else:
        out["item"] = x.raw
    if x.type:
        out["type"] = x.type
    for name in ("critic", "reader"):
        if getattr(x, name):
            out[name] = getattr(x, name)
    out.update(dict(r.extra))
    return out


def build_card(gen: Setup, state: Ledger, records: List[Record], rejects: List[Record]) -> Record:
    """The set's card (see the module docstring)."""
    from ragexam.llm.cost import cost_usd

    achieved = Counter(r["type"] for r in records)
    kinds = list(gen.targets) + [k for k in achieved if k not in gen.targets]
    mix = {k: {"target": gen.targets.get(k, 0), "achieved": achieved.get(k, 0)} for k in kinds}
    reasons = Counter(r["reason"] for r in rejects)
    docs_q = {d for r in records for d in r.get("relevant_doc_ids", [])}
    src_docs = {gen.by_sid[s].doc_id for r in records for s in r["metadata"]["generation"]["sections"]}
    prompted = {sid for sid, n in state.coverage.uses.items() if n}
    usage: Dict[str, Json] = {k: dict(v) for k, v in state.usage.items()}
    total_cost: Union[float, str] = "unknown"
    if usage and all(isinstance(v.get("cost_usd"), (int, float)) for v in usage.values()):
        total_cost = sum(float(v["cost_usd"]) for v in usage.values())
    elif not usage:
        total_cost = cost_usd(0, 0, gen.price_pair())
    candidates = sum(1 for r in rejects if "cid" in r) + len(records)
    return {
        "format": CARD_FORMAT,
        "signature": gen.signature(),
        "corpus": {"source": gen.corpus.source, "n_documents": len(gen.corpus), "n_sections": len(gen.sections),
                   "language": gen.language, "script": gen.facts.script},
        "n_requested": gen.config.n,
        "n_kept": len(records),
        "shortfall": max(0, gen.config.n - len(records)),
        "mix": mix,
        "coverage": {"documents_prompted": len({gen.by_sid[s].doc_id for s in prompted}),
                     "sections_prompted": len(prompted), "sections": len(gen.sections),
                     "documents_with_questions": len(src_docs), "relevant_documents": len(docs_q),
                     "documents": len(gen.corpus), "section_uses_max": max(state.coverage.uses.values() or [0])},
        "candidates": candidates,
        "checks": list(gen.checks),
        "cite": gen.cite,
        "unwrapped": sum(1 for r in records if r["metadata"]["generation"].get("unwrapped")),
        "rejections": {k: reasons[k] for k in REASONS if reasons.get(k)},
        "rejection_meanings": {k: REASONS[k][1] for k in REASONS if reasons.get(k)},
        "passes": state.pass_no,
        "stopped": state.stop,
        "notes": sorted(state.notes),
        "prompt": {"name": gen.prompts.name, "version": gen.prompts.version, "sha": gen.prompts.sha,
                   "source": gen.prompts.source, "kinds": gen.prompts.kinds},
        "models": {"generator": gen.client.model, "judge": gen.judge.model, "endpoint": gen.client.endpoint},
        "checked_by": {"model": gen.judge.model, "generator_itself": gen.checked_by_generator,
                       "text": checked_by_text(gen.judge.model, gen.client.model)},
        "generation_calls": len(state.tasks),
        "limits": {"max_passes": gen.config.max_passes, "max_calls": gen.config.max_calls,
                   "max_generation_calls": gen.config.max_generation_calls, "budget": gen.config.budget},
        "this_run": {"usage": usage, "cost_usd": total_cost},
    }


def checked_by_text(judge: str, generator: str) -> str:
    """Who made the LLM checks, in words: "checked by the generator itself: MODEL" when the judge is the generator
    (its critic and reader are then no second opinion), else "checked by another model: JUDGE (the generator:
    MODEL)"."""
    if judge == generator:
        return f"checked by the generator itself: {judge}"
    return f"checked by another model: {judge} (the generator: {generator})"


def _check_text(g: Record) -> str:
    """The review sheet's ``answer_check`` cell: what the answer check found, in words (:data:`CHECK_WORDS`)."""
    check = g.get("answer_check") or {}
    if isinstance(check, dict) and check.get("method") == "judge":
        return f"judged supported: {check.get('metric')} {check.get('score')}"
    if isinstance(check, dict) and check.get("method") in CHECK_WORDS:
        return CHECK_WORDS[str(check["method"])]
    ooc = g.get("ooc_check") or {}
    if isinstance(ooc, dict) and ooc.get("max") is not None:
        return f"out of corpus: the closest sections judged at most {ooc['max']} of 5 (limit {ooc.get('limit')})"
    return f"out of corpus: {ooc.get('note')}" if isinstance(ooc, dict) and ooc.get("note") else ""


def _signal_cells(g: Record) -> List[str]:
    """The review sheet's ``critic``, ``reader_answer``, ``reader_agreement`` and ``checked_by`` cells."""
    critic = g.get("critic") if isinstance(g.get("critic"), dict) else {}
    reader = g.get("reader") if isinstance(g.get("reader"), dict) else {}
    who = g.get("checked_by") if isinstance(g.get("checked_by"), dict) else {}
    agreement = str(reader.get("agreement", "")) + (f" {reader['score']}/5" if "score" in reader else "")
    by = (f"the generator itself: {who.get('model')}" if who.get("generator_itself") else str(who.get("model"))) \
        if who else ""
    return [f"{critic['score']}/3" if "score" in critic else "", str(reader.get("answer", "")), agreement, by]


#: what a spreadsheet takes for the start of a formula (OWASP, "CSV injection")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def sheet_cell(value: str) -> str:
    """``value`` as the review sheet holds it: a text a spreadsheet would run as a formula -- starting with ``=``,
    ``+``, ``-``, ``@``, a tab or a carriage return after any leading ``'`` -- gets one more leading ``'``
    (Excel shows it as text); :func:`read_cell` takes it off, so every text reads back as it was written."""
    if value[:1] not in _FORMULA_START and value[:1] != "'":  # the usual cell: nothing to look at
        return value
    core = value.lstrip("'")
    return "'" + value if core[:1] in _FORMULA_START and core else value


def read_cell(cell: str) -> str:
    """The text a review sheet's ``cell`` holds (the inverse of :func:`sheet_cell`)."""
    if cell[:1] != "'":
        return cell
    core = cell.lstrip("'")
    return cell[1:] if core[:1] in _FORMULA_START and core else cell


def review_cells(records: List[Record]) -> List[List[str]]:
    """The review sheet's rows (:data:`REVIEW_COLUMNS`) for ``records``, as texts (not escaped)."""
    rows = []
    for r in records:
        g = r.get("metadata", {}).get("generation", {})
        rows.append([r["query_id"], "pending", r.get("type", ""), r["question"], r.get("ground_truth", ""),
                     json.dumps(r.get("evidence", []), ensure_ascii=False), " ".join(r.get("relevant_doc_ids", [])),
                     "" if g.get("overlap") is None else f"{g['overlap']:.3f}", " ".join(g.get("anchors", [])),
                     _check_text(g), *_signal_cells(g), g.get("to_reviewer", "")])
    return rows


def write_sheet_rows(header: Sequence[str], rows: List[List[str]]) -> str:
    """The review sheet's text (without its BOM): ``header``, then ``rows`` with every cell :func:`sheet_cell`."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    for row in rows:
        w.writerow([sheet_cell(str(c)) for c in row])
    return buf.getvalue()


def _review_rows(records: List[Record]) -> str:
    return write_sheet_rows(REVIEW_COLUMNS, review_cells(records))


def write_outputs(result: GenerateResult, out: Union[str, Path]) -> Dict[str, Path]:
    """Write the four files (see the module docstring); returns their paths.  When no question was kept, only
    the rejects file is written (why each call or candidate gave none): an empty set, its card and an empty review
    sheet would be files to audit and run that hold nothing."""
    paths = check_outputs(out)
    _write(paths["rejects"], _jsonl(result.rejects))
    if not result.records:
        return {"rejects": paths["rejects"]}
    _write(paths["qa"], _jsonl(result.records))
    # the card's audit block: "not audited", unless a resumed run wrote the very bytes an audit read
    from ragexam.questions.audit import audit_status

    card = dict(result.card, audit=audit_status(paths["qa"]).to_dict())
    _write(paths["card"], json.dumps(card, ensure_ascii=False, indent=2, allow_nan=False) + "\n")
    _write(paths["review"], "\ufeff" + _review_rows(result.records))  # with a BOM: Excel then reads UTF-8
    return paths
