"""Console rendering of ``ragexam traces import`` and ``ragexam traces sample``.

Only renders: every number comes from :class:`~ragexam.analysis.answers.traces.ImportResult` and the sample's
card; the reasons are shown with their meanings in English and Korean.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, List, Mapping, Optional, Tuple

from ragexam import fmt

if TYPE_CHECKING:  # pragma: no cover
    from pathlib import Path

    from rich.console import Console
    from rich.table import Table

    from ragexam.analysis.answers.traces import ImportResult
    from ragexam.questions.traces_sample import SampleResult

__all__ = ["print_import", "print_sample"]


def _reasons_table(title: str, counts: Mapping[str, int], meanings: Mapping[str, Tuple[str, str]],
                   examples: Mapping[str, List[str]]) -> "Table":
    from rich.markup import escape
    from rich.table import Table

    t = Table(title=title)
    for col in ("reason", "count", "meaning", "e.g."):
        t.add_column(col, justify="right" if col == "count" else "left", overflow="fold")
    for reason, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        ko, en = meanings.get(reason, ("", ""))
        t.add_row(reason, str(n), escape(f"{en} / {ko}" if en else ""),
                  escape("; ".join(examples.get(reason, [])[:2])))
    return t


def _explain(res: "ImportResult", console: "Console") -> None:
    from rich.markup import escape
    from rich.table import Table

    roles = Table(title="spans by role (how the traces were mapped)")
    for col in ("role", "kind", "name", "spans"):
        roles.add_column(col, justify="right" if col == "spans" else "left", overflow="fold")
    for (role, kind, name), n in res.roles.most_common(15):
        roles.add_row(role, escape(kind), escape(name), str(n))
    console.print(roles)
    if len(res.roles) > 15:
        console.print(f"(+{len(res.roles) - 15} more span names)", highlight=False)
    for ex in res.explanations:
        console.print(f"trace {ex.trace_id}: {ex.outcome}", highlight=False, markup=False)
        spans = ", ".join(f"{n or '(unnamed)'} [{k or '-'} -> {r}]" for n, k, r in ex.spans[:12])
        console.print(f"  spans: {spans}", highlight=False, markup=False, soft_wrap=True)
        console.print(f"  retrieval: {ex.retrieval or 'none'} ({ex.documents or 'no documents'}); generation: "
                      f"{ex.generation or 'none'}", highlight=False, markup=False, soft_wrap=True)
        console.print(f"  question from: {ex.question_from or '-'}; answer from: {ex.answer_from or '-'}",
                      highlight=False, markup=False, soft_wrap=True)
        if ex.problems:
            console.print(f"  imported without: {', '.join(ex.problems)}", highlight=False, markup=False)


def print_import(res: "ImportResult", console: "Console", *, explain: bool = False) -> None:
    """What ``traces import`` read, wrote, skipped and redacted."""
    from ragexam.data.traces.mapping import SKIP_REASONS
    from ragexam.data.traces.meta import PROBLEMS
    from ragexam.data.traces.reading import LINE_REASONS, NOT_AN_EXPORT, NOT_AN_EXPORT_REASONS

    files = "; ".join(f"{p} ({f})" for p, f in res.files)
    console.print(f"read {fmt.plural(len(res.files), 'file')}: {files}", highlight=False, markup=False, soft_wrap=True)
    read = ", ".join(fmt.plural(n, what) for n, what in ((res.records, "record"), (res.spans, "span"),
                                                            (res.traces, "trace")) if n) or "no record was read"
    console.print(read + (" (grouped on disk: the export was larger than the memory limit)" if res.spilled else ""),
                  highlight=False)
    if explain:
        _explain(res, console)
    if res.out is not None:
        failed = f", {res.failed} of them failed requests (answer null, with their error)" if res.failed else ""
        console.print(f"imported {fmt.plural(res.imported, 'trace')} into {res.out}{failed}", highlight=False,
                      markup=False, soft_wrap=True)
    elif res.imported:
        console.print(f"{fmt.plural(res.imported, 'trace')} would be imported (no --out: nothing written)",
                      highlight=False)
    else:
        console.print("no trace could be imported: nothing written / 가져온 트레이스가 없습니다", highlight=False)
    if res.problems:
        console.print(_reasons_table("imported without / 빠진 채 가져옴", res.problems, PROBLEMS, res.problem_examples))
    if res.skipped:
        console.print(_reasons_table(f"skipped {fmt.plural(sum(res.skipped.values()), 'trace')} / 건너뜀",
                                     res.skipped, SKIP_REASONS, res.skipped_examples))
    unused = {k: n for k, n in res.unreadable.items() if k != "bom"}  # a BOM is a note on a file, not a record
    if unused:
        console.print(_reasons_table("records not used / 쓰지 않은 레코드", unused, LINE_REASONS,
                                     res.unreadable_examples))
    if not res.imported and any(res.unreadable.get(k) for k in NOT_AN_EXPORT_REASONS):
        console.print(f"{NOT_AN_EXPORT[0]}\n{NOT_AN_EXPORT[1]}", highlight=False, markup=False, soft_wrap=True)
    if res.unreadable.get("bom"):
        ko, en = LINE_REASONS["bom"]
        console.print(f"note: {fmt.plural(res.unreadable['bom'], 'file')}: {en} / {ko}", highlight=False,
                      markup=False, soft_wrap=True)
    if res.redacted:
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(res.redacted.items()))
        console.print(f"redacted personal data / 개인정보 가림: {kinds}", highlight=False, markup=False)
    if res.mapping:
        console.print(f"mapping overrides: {', '.join(res.mapping)}", highlight=False, markup=False)


def print_sample(res: "SampleResult", console: "Console", out: Optional["Path"]) -> None:
    """The sample's card: traffic, clusters, evidence, types, rejections, files."""
    from rich.markup import escape
    from rich.table import Table

    card = res.card
    tr = card["traffic"]
    console.print(f"traffic: {fmt.plural(tr['with_question'], 'traced question')} ({tr['distinct_questions']} "
                  f"distinct, {fmt.plural(tr['clusters'], 'cluster')} of near-duplicates; largest: "
                  f"{', '.join(map(str, tr['largest_clusters']))})", highlight=False, soft_wrap=True)
    if tr.get("without_question"):
        console.print(f"{fmt.plural(tr['without_question'], 'answer')} without a question were not used",
                      highlight=False)
    share = f" = {fmt.percent(tr['share_covered'], 1)} of the traced questions" if tr.get("share_covered") is not None \
        and card["n_kept"] else ""
    console.print(f"candidates: {card['n_kept']} of {card['n_requested']} asked for, covering "
                  f"{fmt.plural(tr['traces_covered'], 'trace')}{share}", highlight=False, soft_wrap=True)
    t = Table(title="candidates / 후보")
    for col in ("what", "counts"):
        t.add_column(col, overflow="fold")
    for what in ("picked", "evidence", "types"):
        if card[what]:
            t.add_row(what, escape(", ".join(f"{k} {v}" for k, v in card[what].items())))
    console.print(t)
    if card["rejections"]:
        r = Table(title=f"rejected: {sum(card['rejections'].values())} (in the rejects file; rescuable in review)")
        for col in ("reason", "count", "meaning"):
            r.add_column(col, justify="right" if col == "count" else "left", overflow="fold")
        for reason, n in card["rejections"].items():
            r.add_row(reason, str(n), escape(card["rejection_meanings"].get(reason, "")))
        console.print(r)
    for note in card["notes"]:
        console.print(f"note: {note}", highlight=False, markup=False, soft_wrap=True)
    if out is not None:
        from ragexam.questions.output import side_paths

        paths = side_paths(out)
        console.print(f"wrote {paths['qa']} (+ rejects, card, review sheet {paths['review']}); review it in the sheet "
                      f"and run `ragexam review apply --qa {paths['qa']} --out exam.jsonl`", highlight=False,
                      markup=False, soft_wrap=True)
