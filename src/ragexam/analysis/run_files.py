"""Writing a :class:`~ragexam.analysis.run.RunResult` to disk (docs/run-format.md).

``DIR/summary.json``, ``DIR/per_question.csv`` and, per pipeline, ``DIR/runs/<slug>.trec``
(the retrieved chunks), ``DIR/runs/<slug>.units.trec`` and ``DIR/runs/<slug>.units.qrels``
(the judged lists the metrics were computed on:
``ragexam evaluate --qrels X.units.qrels --run X.units.trec`` reproduces them exactly).

In ``<slug>.units.trec`` the item at rank i of a list of n gets the score n - i + 1, so the
file's order (score descending) is the judged order with no ties to re-sort.  In
``<slug>.trec`` the scores are the retriever's, written with ``repr`` (exact); a reader that
sorts by score re-sorts tied chunks by id (trec_eval: descending), so the ``rank`` column
is the order ragexam judged.
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

from ragexam.errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    from ragexam.analysis.run import RunResult

__all__ = ["save_run", "PER_QUESTION_FIXED"]

#: the columns of per_question.csv before the metric columns, and after them
PER_QUESTION_FIXED = ("pipeline", "retriever", "chunker", "query_id", "type", "answerable", "first_rank",
                      "unit_ranks", "n_units")
PER_QUESTION_TAIL = ("top_ids",)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return str(value)


def _write_text(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8", newline="\n")
    os.replace(tmp, path)


def save_run(result: "RunResult", directory: Union[str, Path]) -> Path:
    """Write every file of docs/run-format.md into ``directory``; returns it as a Path."""
    from ragexam.data.trec import write_trec_qrels, write_trec_run

    out = Path(directory)
    try:
        (out / "runs").mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise InputError(f"cannot create the output directory: {err.strerror or err}.", source=str(out),
                         field="out") from None
    _write_text(out / "summary.json", result.to_json() + "\n")

    columns = list(PER_QUESTION_FIXED) + list(result.main_metrics) + list(PER_QUESTION_TAIL)
    tmp = out / "per_question.csv.tmp"
    with open(tmp, "w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(columns)
        for row in result.per_question:
            w.writerow([_cell(row.get(c)) for c in columns])
    os.replace(tmp, out / "per_question.csv")

    for p in result.pipelines:
        ranked = result.rankings[p.name]
        write_trec_run(out / "runs" / f"{p.slug}.trec",
                       ((qid, cid, i, score) for qid, hits in ranked.items()
                        for i, (cid, score) in enumerate(hits, 1)), tag="ragexam")
        J = result.judgments[p.name]
        write_trec_run(out / "runs" / f"{p.slug}.units.trec",
                       ((qid, item, i, float(len(items) - i + 1)) for qid, items in J.run.items()
                        for i, item in enumerate(items, 1)), tag="ragexam")
        write_trec_qrels(out / "runs" / f"{p.slug}.units.qrels",
                         ((qid, unit, grade) for qid, units in J.qrels.items() for unit, grade in units.items()))
    return out
