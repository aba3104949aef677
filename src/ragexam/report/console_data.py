"""Console rendering of the data commands: ``evaluate``, ``validate``, ``datasets`` and ``evidence-coverage``.

Rendering only: each function takes what :mod:`ragexam.api` (or the function it names) returned and prints it.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Sequence

from ragexam import fmt

if TYPE_CHECKING:
    from ragexam.data.catalog import DatasetInfo
    from ragexam.data.evidence import Coverage
    from ragexam.data.validation import ValidationReport
    from ragexam.metrics.ranking import RankingResult

__all__ = ["print_ranking_result", "print_validation", "print_datasets", "print_coverage"]


def print_ranking_result(res: "RankingResult", title: str, console) -> None:
    """A :class:`~ragexam.metrics.ranking.RankingResult`: one row per metric (named as asked), the scored
    query count, the queries missing from the run, the excluded ones by reason, and the signature."""
    from rich.table import Table
    from rich.text import Text

    table = Table(title=Text(title), show_lines=False)
    table.add_column("metric")
    table.add_column("mean", justify="right")
    for name, value in res.mean.items():
        table.add_row(Text(name), fmt.num(value, 4))
    console.print(table)
    renamed = [f"{a} = {c}" for a, c in getattr(res, "canonical_names", {}).items() if a != c]
    if renamed:
        console.print(f"names as asked; canonical: {', '.join(renamed)}", style="dim", highlight=False)
    console.print(f"scored queries: {res.n_queries}", highlight=False)
    if res.missing_from_run:
        console.print(f"in qrels but not in the run (scored 0, counted): {len(res.missing_from_run)}",
                      highlight=False)
    for reason, count in Counter(e["reason"] for e in res.excluded).items():
        console.print(f"excluded ({reason}): {count}", highlight=False)
    console.print(f"signature: {res.signature}", style="dim", highlight=False, soft_wrap=True)


def print_validation(report: "ValidationReport", console, *, with_questions: bool) -> None:
    """A :class:`~ragexam.data.validation.ValidationReport`: every problem, a count by kind, and the verdict."""
    from rich.markup import escape
    from rich.table import Table

    from ragexam.data.problems import KINDS

    for p in report.problems:
        color = "red" if p.level == "error" else "yellow"
        console.print(f"[{color}]{p.level:<7}[/] {escape(str(p).split(': ', 1)[1])}  [dim]({p.kind})[/]",
                      highlight=False, soft_wrap=True)
    counts = report.counts_by_kind()
    if counts:
        table = Table(title="problems by kind")
        for col, just in (("kind", "left"), ("level", "left"), ("count", "right"), ("meaning", "left")):
            table.add_column(col, justify=just)
        for kind, n in counts.items():
            level, meaning = KINDS[kind]
            table.add_row(kind, level, str(n), meaning)
        console.print(table)
    if report.grading is not None:
        from ragexam.data.gradability import counts_line

        g = report.grading
        blocking = [p for p in report.errors if p.kind != "run_would_refuse"]
        errors = f"the {fmt.noun(len(blocking), 'error')} above {'is' if len(blocking) == 1 else 'are'}"
        verdict = "[red]would refuse[/]" if g.refusal else f"[red]refuses until {errors} fixed[/]" if blocking \
            else "[green]grades every answerable question[/]"
        console.print(f"grading: {escape(counts_line(g))}; `ragexam run` with {g.mode} {verdict}",
                      highlight=False, soft_wrap=True)
    what = fmt.plural(report.documents, "document") + (
        f", {fmt.plural(report.questions, 'question')}" if with_questions else "")
    status = "[green]OK[/]" if report.ok else "[red]FAILED[/]"
    console.print(f"{status}: {fmt.plural(len(report.errors), 'error')}, "
                  f"{fmt.plural(len(report.warnings), 'warning')} ({what})", highlight=False, soft_wrap=True)


def print_datasets(infos: Sequence["DatasetInfo"], console) -> None:
    """The bundled question sets with their sizes and question types."""
    from rich.table import Table

    table = Table(title="bundled datasets")
    for col, just in (("name", "left"), ("docs", "right"), ("questions", "right"), ("types", "left")):
        table.add_column(col, justify=just)
    for i in infos:
        if not i.available:
            table.add_row(i.name, "-", "-", "[red]not installed[/]")
            continue
        table.add_row(i.name, str(i.docs), str(i.questions), ", ".join(f"{t} {n}" for t, n in i.types.items()))
    console.print(table)


def print_coverage(coverage: "Coverage", console) -> None:
    """A :class:`ragexam.data.evidence.Coverage`: every evidence string no chunk contains whole, with the chunk
    boundaries that cut it, then the count."""
    from rich.markup import escape

    for r in coverage.missing:
        console.print(f"[red]cut[/] {escape(r.query_id)} {r.unit_id} {escape(repr(r.evidence))}", highlight=False,
                      soft_wrap=True)
        for c in r.cuts:
            console.print(f"    {escape(c.doc_id)} [{c.evidence_start}, {c.evidence_end}) boundary at "
                          f"{', '.join(map(str, c.offsets)) or '-'}; chunks {escape(', '.join(c.chunk_ids))}",
                          highlight=False, soft_wrap=True)
    n = len(coverage.rows)
    console.print(f"{n - len(coverage.missing)}/{n} evidence strings inside a single chunk "
                  f"({escape(coverage.signature)})", highlight=False, soft_wrap=True)
