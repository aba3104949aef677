"""The ``ragexam`` command line: a thin shell over the Python API.

Every command imports what it needs inside its body, so ``ragexam --help`` stays fast.
Errors ragexam raises on purpose (:class:`ragexam.errors.RagexamError`) are printed as one
clear message on stderr and exit with status 2; anything else is a bug and keeps its
traceback.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import List, Optional

import typer

from ragexam import fmt


class _Group(typer.core.TyperGroup):
    """The command group, with flags shown without a type in ``--help``: recent typer versions print
    ``--json <bool>``, which reads as if the flag took a value."""

    @staticmethod
    def _untyped_flags(command, ctx):
        for p in [*command.params, command.get_help_option(ctx)]:
            if p is not None and getattr(p, "is_flag", False) and p.metavar is None:
                p.metavar = ""
        return command

    def get_command(self, ctx, cmd_name):
        cmd = super().get_command(ctx, cmd_name)
        return self._untyped_flags(cmd, ctx) if cmd is not None else None

    def format_help(self, ctx, formatter):
        self._untyped_flags(self, ctx)
        super().format_help(ctx, formatter)


app = typer.Typer(
    name="ragexam",
    help="Grade retrieval-augmented generation pipelines like a mock exam.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    cls=_Group,
)


def _stdout():
    from rich.console import Console

    return Console(soft_wrap=False)


def _print_json(obj) -> None:
    import json

    sys.stdout.write(json.dumps(obj, ensure_ascii=False, indent=2, allow_nan=False) + "\n")


def _print_version(value: bool) -> None:
    if value:
        from ragexam import __version__

        typer.echo(f"ragexam {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", help="Print the version and exit.", is_eager=True,
                                 callback=_print_version, expose_value=False),
) -> None:
    pass  # --version is handled by its callback, before a command is required


# --- commands: ranking metrics -------------------------------------------------------------

_DEFAULT_EVAL_METRICS = ["hit@1", "hit@3", "mrr", "ndcg@10", "p@5", "r@5", "f1@5", "rprec", "map"]


def _print_ranking_result(res, title: str) -> None:
    from rich.table import Table

    console = _stdout()
    table = Table(title=title, show_lines=False)
    table.add_column("metric")
    table.add_column("mean", justify="right")
    for name, value in res.mean.items():
        table.add_row(name, fmt.num(value, 4))
    console.print(table)
    console.print(f"scored queries: {res.n_queries}", highlight=False)
    if res.missing_from_run:
        console.print(f"in qrels but not in the run (scored 0, counted): {len(res.missing_from_run)}", highlight=False)
    if res.excluded:
        from collections import Counter

        for reason, count in Counter(e["reason"] for e in res.excluded).items():
            console.print(f"excluded ({reason}): {count}", highlight=False)
    console.print(f"signature: {res.signature}", style="dim", highlight=False)


@app.command()
def evaluate(
    qrels: str = typer.Option(..., "--qrels", help="TREC qrels file ('qid 0 docid rel'), or a bundled name (lecture)."),
    run: str = typer.Option(..., "--run", help="TREC run file ('qid Q0 docid rank score tag'), or a bundled name."),
    metric: Optional[List[str]] = typer.Option(None, "--metric", "-m",
                                               help="Metric name, repeatable: hit@K mrr mrr@K ndcg ndcg@K p@K r@K "
                                                    "f1@K fB@K rprec map map@K. Default: a standard set."),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON object instead of a table."),
    trec_compat: bool = typer.Option(False, "--trec-compat",
                                     help="Reproduce trec_eval: drop qrels queries absent from the run and score "
                                          "queries without relevant judgments as 0."),
    relevance_level: int = typer.Option(1, "--relevance-level", "-l",
                                        help="Minimum grade that counts as relevant for binary metrics (trec_eval -l)."),
) -> None:
    """Evaluate a TREC run against TREC qrels (numbers identical to trec_eval)."""
    from ragexam.data.trec import resolve_trec_path
    from ragexam.metrics.ranking import evaluate as _evaluate

    res = _evaluate(resolve_trec_path(qrels, "qrels"), resolve_trec_path(run, "run"),
                    metric or _DEFAULT_EVAL_METRICS, relevance_level=relevance_level, trec_compat=trec_compat)
    if json_out:
        _print_json(res.to_dict())
    else:
        _print_ranking_result(res, f"{run} vs {qrels}")


# --- commands: question sets ---------------------------------------------------------------


def _qs_problem_line(p) -> str:
    from rich.markup import escape

    color = "red" if p.level == "error" else "yellow"
    return f"[{color}]{p.level:<7}[/] {escape(str(p).split(': ', 1)[1])}  [dim]({p.kind})[/]"


@app.command("validate")
def validate_cmd(
    corpus: str = typer.Option(..., "--corpus", help="Corpus file (JSONL, or .csv) or a bundled dataset name."),
    qa: Optional[str] = typer.Option(None, "--qa", help="QA file (JSONL) or a bundled dataset name."),
    ignore_punctuation: bool = typer.Option(False, "--ignore-punctuation",
                                            help="Ignore punctuation when matching evidence strings."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Check a corpus and a QA set; print every problem and a count by kind.

    Exits 1 if any error-level problem was found, 0 otherwise (warnings allowed).
    """
    from ragexam.data.problems import KINDS
    from ragexam.data.validation import validate

    report = validate(corpus, qa, ignore_punctuation=ignore_punctuation)
    if as_json:
        _print_json(report.to_dict())
        raise typer.Exit(0 if report.ok else 1)
    from rich.table import Table

    con = _stdout()
    for p in report.problems:
        con.print(_qs_problem_line(p), highlight=False, soft_wrap=True)
    counts = report.counts_by_kind()
    if counts:
        table = Table(title="problems by kind")
        table.add_column("kind")
        table.add_column("level")
        table.add_column("count", justify="right")
        table.add_column("meaning")
        for kind, n in counts.items():
            level, meaning = KINDS[kind]
            table.add_row(kind, level, str(n), meaning)
        con.print(table)
    what = fmt.plural(report.documents, "document") + (
        f", {fmt.plural(report.questions, 'question')}" if qa is not None else "")
    status = "[green]OK[/]" if report.ok else "[red]FAILED[/]"
    con.print(f"{status}: {fmt.plural(len(report.errors), 'error')}, {fmt.plural(len(report.warnings), 'warning')} "
              f"({what})",
              highlight=False, soft_wrap=True)
    raise typer.Exit(0 if report.ok else 1)


@app.command("datasets")
def datasets_cmd(
    as_json: bool = typer.Option(False, "--json", help="Print the list as JSON."),
) -> None:
    """List the bundled question sets (usable as --corpus NAME --qa NAME) with their sizes."""
    from ragexam.data.catalog import list_datasets

    infos = list_datasets()
    if as_json:
        _print_json([i.to_dict() for i in infos])
        return
    from rich.table import Table

    table = Table(title="bundled datasets")
    for col, just in (("name", "left"), ("docs", "right"), ("questions", "right"), ("types", "left")):
        table.add_column(col, justify=just)
    for i in infos:
        if not i.available:
            table.add_row(i.name, "-", "-", "[red]not installed[/]")
            continue
        types = ", ".join(f"{t} {n}" for t, n in i.types.items())
        table.add_row(i.name, str(i.docs), str(i.questions), types)
    _stdout().print(table)


@app.command("evidence-coverage")
def evidence_coverage_cmd(
    corpus: str = typer.Option(..., "--corpus", help="Corpus file or bundled dataset name."),
    qa: str = typer.Option(..., "--qa", help="QA file or bundled dataset name."),
    chunker: str = typer.Option("whole", "--chunker", help="Chunker spec, e.g. chars:400:80, sentences:300."),
    ignore_punctuation: bool = typer.Option(False, "--ignore-punctuation",
                                            help="Ignore punctuation when matching evidence strings."),
    as_json: bool = typer.Option(False, "--json", help="Print the coverage as JSON."),
) -> None:
    """Check that every evidence string is inside some chunk; report the chunk boundaries that cut.

    Exits 1 if some evidence string is contained whole by no chunk, 0 otherwise.
    """
    from ragexam.data.chunking import chunk_corpus, parse_chunker
    from ragexam.data.evidence import EvidenceIndex, evidence_coverage
    from ragexam.data.loaders import load_corpus, load_qa

    spec = parse_chunker(chunker)
    docs = load_corpus(corpus)
    questions = load_qa(qa, corpus=docs, ignore_punctuation=ignore_punctuation)
    index = EvidenceIndex.build(docs, chunk_corpus(docs, spec), ignore_punctuation=ignore_punctuation)
    rows = evidence_coverage(questions, index)
    missing = [r for r in rows if not r.findable]
    if as_json:
        _print_json({"signature": index.signature, "evidence": len(rows), "findable": len(rows) - len(missing),
                     "coverage": [r.to_dict() for r in rows]})
        raise typer.Exit(1 if missing else 0)
    from rich.markup import escape

    con = _stdout()
    for r in missing:
        con.print(f"[red]cut[/] {escape(r.query_id)} {r.unit_id} {escape(repr(r.evidence))}", highlight=False,
                  soft_wrap=True)
        for c in r.cuts:
            con.print(f"    {escape(c.doc_id)} [{c.evidence_start}, {c.evidence_end}) boundary at "
                      f"{', '.join(map(str, c.offsets)) or '-'}; chunks {escape(', '.join(c.chunk_ids))}",
                      highlight=False, soft_wrap=True)
    con.print(f"{len(rows) - len(missing)}/{len(rows)} evidence strings inside a single chunk "
              f"({escape(index.signature)})", highlight=False, soft_wrap=True)
    raise typer.Exit(1 if missing else 0)


# --- commands: text metrics ----------------------------------------------------------------


def _read_segments(path: Path, role: str) -> List[str]:
    """One segment per line of a UTF-8 text file (a final newline ends the last line; a
    trailing ``\\r`` is dropped)."""
    from ragexam.errors import InputError

    try:
        data = path.read_bytes()
    except OSError as err:
        raise InputError(f"cannot read the {role} file: {err.strerror or err}.", source=str(path)) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise InputError(f"the {role} file is not valid UTF-8 (byte {err.start}); save it as UTF-8.",
                         source=str(path), line=line) from None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def _read_text_pair(refs: Path, hyps: Path):
    from ragexam.errors import InputError

    ref_lines = _read_segments(refs, "references")
    hyp_lines = _read_segments(hyps, "hypotheses")
    if len(ref_lines) != len(hyp_lines):
        raise InputError(
            f"line counts differ: references {refs} has {len(ref_lines)} lines, hypotheses {hyps} "
            f"has {len(hyp_lines)}; the files must be parallel, one segment per line.",
            source=f"{refs}, {hyps}")
    return ref_lines, hyp_lines


@app.command("bleu")
def bleu_cmd(
    refs: Path = typer.Argument(..., help="References, one segment per line (UTF-8)."),
    hyps: Path = typer.Argument(..., help="Hypotheses, parallel to REFS."),
    tokenize: str = typer.Option("13a", "--tokenize", "-t",
                                 help="none, 13a, intl, char, ko-mecab (needs ragexam\\[ko]) or ko-kiwi."),
    smooth: str = typer.Option("exp", "--smooth", "-s", help="none, floor, add-k or exp."),
    smooth_value: Optional[float] = typer.Option(None, "--smooth-value",
                                                 help="For floor (default 0.1) and add-k (default 1)."),
    lowercase: bool = typer.Option(False, "--lowercase", "-lc", help="Case-insensitive BLEU."),
    effective_order: bool = typer.Option(False, "--effective-order", help="Use effective n-gram order."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON: score in [0, 1], signature, details."),
) -> None:
    """Corpus BLEU of HYPS against REFS (sacrebleu-identical; score in [0, 1])."""
    from ragexam.metrics.text import corpus_bleu

    ref_lines, hyp_lines = _read_text_pair(refs, hyps)
    res = corpus_bleu(hyp_lines, ref_lines, tokenize=tokenize, smooth=smooth, smooth_value=smooth_value,
                      lowercase=lowercase, effective_order=effective_order)
    if as_json:
        _print_json({"score": res.score, "signature": res.signature, "precisions": list(res.precisions),
                     "bp": res.bp, "sys_len": res.sys_len, "ref_len": res.ref_len})
    else:
        typer.echo(res.format())


@app.command("chrf")
def chrf_cmd(
    refs: Path = typer.Argument(..., help="References, one segment per line (UTF-8)."),
    hyps: Path = typer.Argument(..., help="Hypotheses, parallel to REFS."),
    plus: bool = typer.Option(False, "--plus", help="chrF++: add word uni- and bigrams (word order 2)."),
    lowercase: bool = typer.Option(False, "--lowercase", "-lc", help="Case-insensitive chrF."),
    whitespace: bool = typer.Option(False, "--whitespace", help="Keep whitespace in character n-grams."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON: score in [0, 1] and signature."),
) -> None:
    """Corpus chrF (or chrF++ with --plus) of HYPS against REFS (sacrebleu-identical; [0, 1])."""
    from ragexam.metrics.text import corpus_chrf

    ref_lines, hyp_lines = _read_text_pair(refs, hyps)
    res = corpus_chrf(hyp_lines, ref_lines, word_order=2 if plus else 0, lowercase=lowercase,
                      whitespace=whitespace)
    if as_json:
        _print_json({"score": res.score, "signature": res.signature})
    else:
        typer.echo(res.format())


# --- commands: retrieval runs --------------------------------------------------------------

_DEMO_RETRIEVERS = ["bm25", "dense", "hybrid:bm25+dense"]

_HISTORY_HELP = ("History database (default: $RAGEXAM_HISTORY, else $RAGEXAM_HOME/history.sqlite3, else "
                 "$XDG_DATA_HOME/ragexam/history.sqlite3 or ~/.local/share/ragexam/history.sqlite3).")


def _split_commas(values: Optional[List[str]]) -> Optional[List[str]]:
    if not values:
        return None
    return [p.strip() for v in values for p in v.split(",") if p.strip()]


def _execute_run(settings: dict, *, json_out: bool, demo: bool = False, history: Optional[Path] = None,
                 no_history: bool = False, report: Optional[Path] = None) -> None:
    """Run with ``settings`` (keys of ragexam.analysis.run_config), write ``--out`` files, record the run in
    the history (unless ``no_history``), write the ``--report`` HTML, then print tables or JSON.

    With ``json_out`` stdout holds only the JSON object; the history and report lines go to stderr."""
    from ragexam.analysis.run import run as _run
    from ragexam.errors import InputError
    from ragexam.storage.paths import check_output_dir, check_output_file, history_path

    settings = dict(settings)
    out = settings.pop("out", None)
    if out is not None:
        check_output_dir(out, option="--out")
    if report is not None:
        check_output_file(report, option="--report")
    if not no_history:
        check_output_file(history or history_path(), option="--history")
    for key in ("corpus", "qa"):
        if settings.get(key) is None:
            raise InputError(f"no {key} given; pass --{key} PATH_OR_NAME (or set {key} in the --config file).",
                             source="ragexam run", field=key)
    result = _run(settings.pop("corpus"), settings.pop("qa"), **settings)
    if out is not None:
        result.save(out)
    run_id = hist_path = None
    if not no_history:
        from ragexam.analysis.recording import record_run
        from ragexam.storage.history import History

        hist_path = History(history).path
        before = result.summary["run_id"]
        run_id = record_run(result.summary, result.per_question, hist_path)
        if out is not None and run_id != before:
            result.save(out)  # the id changed: keep summary.json in step with the history
    report_path = None
    if report is not None:
        from ragexam.report.html import write_report

        report_path = write_report(result.summary, result.per_question, report)
    notes = []
    if run_id is not None:
        notes.append(f"Recorded as run {run_id} in {hist_path} (ragexam show {run_id}).")
    if report_path is not None:
        notes.append(f"Wrote the HTML report to {report_path}.")
    if json_out:
        sys.stdout.write(result.to_json() + "\n")
        for note in notes:
            sys.stderr.write(note + "\n")
        return
    from ragexam.report.console_run import render_run, render_where_next, run_console

    console = run_console()
    render_run(result.summary, console)
    console.print()
    if demo:
        render_where_next(console, out=str(out) if out is not None else None, demo=True)
    elif out is not None:
        console.print(f"Wrote summary.json, per_question.csv and runs/ to {out} (format: docs/run-format.md).",
                      highlight=False, markup=False)
    for note in notes:
        console.print(note, highlight=False, markup=False, soft_wrap=True)


_NO_HISTORY_HELP = "Do not record this run in the history database."
_REPORT_HELP = "Also write the self-contained HTML report of this run to FILE.html."


@app.command("run")
def run_cmd(
    corpus: Optional[str] = typer.Option(None, "--corpus", help="Corpus file (JSONL or .csv) or a bundled name "
                                                                "(it_helpdesk, ai_concepts)."),
    qa: Optional[str] = typer.Option(None, "--qa", help="Question set (JSONL) or a bundled name."),
    retriever: Optional[List[str]] = typer.Option(
        None, "--retriever", "-r",
        help="Retriever spec, repeatable; the first is the baseline. bm25, bm25:whitespace, dense, "
             "dense:st:MODEL, dense:openai:MODEL, hybrid:bm25+dense. Default: bm25 and dense."),
    chunker: Optional[List[str]] = typer.Option(
        None, "--chunker", "-c",
        help="Chunker spec, repeatable (or comma-separated): whole, chars:SIZE:OVERLAP, sentences[:SIZE], "
             "paragraphs[:SIZE]. Default: paragraphs:400 (whole sentences, fits e5's 512 tokens)."),
    relevance: Optional[str] = typer.Option(
        None, "--relevance", help="evidence (a chunk counts when it contains an evidence string) or doc (a chunk "
                                  "counts for its document). Default: evidence when the questions have evidence."),
    k: Optional[List[str]] = typer.Option(None, "-k", "--k", help="Cutoffs: -k 1 -k 3 or -k 1,3,5. Default 1,3,5,10."),
    depth: Optional[int] = typer.Option(None, "--depth", help="Chunks retrieved per question (default 100)."),
    miss_k: Optional[int] = typer.Option(None, "--miss-k", help="List a question as missed when no relevant unit "
                                                                "is in its top K (default 5)."),
    out: Optional[Path] = typer.Option(None, "--out", help="Write summary.json, per_question.csv and runs/ here."),
    json_out: bool = typer.Option(False, "--json", help="Print the summary as JSON on stdout (no tables)."),
    seed: Optional[int] = typer.Option(None, "--seed", help="Seed of the bootstrap and randomization tests "
                                                            "(default 12345)."),
    config: Optional[Path] = typer.Option(None, "--config", help="YAML or TOML file with the same settings; flags "
                                                                 "override it."),
    ignore_punctuation: Optional[bool] = typer.Option(None, "--ignore-punctuation/--keep-punctuation",
                                                      help="Ignore punctuation when matching evidence."),
    overlap: Optional[float] = typer.Option(None, "--overlap", help="Count a chunk holding at least this fraction "
                                                                    "(0-1] of an evidence string (default: all)."),
    n_resamples: Optional[int] = typer.Option(None, "--n-resamples", help="Bootstrap resamples (default 2000)."),
    n_permutations: Optional[int] = typer.Option(None, "--n-permutations",
                                                 help="Randomization-test sign flips (default 10000)."),
    report: Optional[Path] = typer.Option(None, "--report", help=_REPORT_HELP),
    history: Optional[Path] = typer.Option(None, "--history", help=_HISTORY_HELP),
    no_history: bool = typer.Option(False, "--no-history", help=_NO_HISTORY_HELP),
) -> None:
    """Grade retriever x chunker pipelines on a question set: metrics with 95% intervals, the P/R/F sweep,
    results per question type, paired comparisons with the first pipeline, and the missed questions."""
    from ragexam.analysis.run_config import load_config_file, merge_settings

    file_settings = load_config_file(config) if config is not None else {}
    flags = {"corpus": corpus, "qa": qa, "retrievers": retriever or None, "chunkers": _split_commas(chunker),
             "relevance": relevance, "k": k or None, "depth": depth, "miss_k": miss_k, "seed": seed,
             "n_resamples": n_resamples, "n_permutations": n_permutations,
             "ignore_punctuation": ignore_punctuation, "overlap": overlap,
             "out": str(out) if out is not None else None}
    _execute_run(merge_settings(file_settings, flags), json_out=json_out, history=history, no_history=no_history,
                 report=report)


@app.command("demo")
def demo_cmd(
    out: Optional[Path] = typer.Option(None, "--out", help="Also write summary.json, per_question.csv and runs/ here."),
    json_out: bool = typer.Option(False, "--json", help="Print the summary as JSON on stdout (no tables)."),
    report: Optional[Path] = typer.Option(None, "--report", help=_REPORT_HELP),
    history: Optional[Path] = typer.Option(None, "--history", help=_HISTORY_HELP),
    no_history: bool = typer.Option(False, "--no-history", help=_NO_HISTORY_HELP),
) -> None:
    """Grade bm25, dense and hybrid retrieval on the bundled Korean IT-helpdesk set, fully offline.

    The same as `ragexam run --corpus it_helpdesk --qa it_helpdesk -r bm25 -r dense -r hybrid:bm25+dense`.
    """
    if not json_out:
        from ragexam.report.console_run import run_console

        run_console().print(
            "ragexam demo: 71 employee questions about a fictional company's IT helpdesk (18 Korean documents; "
            "34 paraphrased 'meaning', 31 'lexical' with codes and names, 6 out-of-corpus), graded for three "
            "retrievers: bm25 (kiwi morphemes), dense (multilingual-e5-small, offline) and hybrid (reciprocal-rank "
            "fusion of both). The questions were not tuned to any retriever. The first run fills the token and "
            "embedding cache (about a minute); later runs read it.\n", highlight=False, markup=False)
    _execute_run({"corpus": "it_helpdesk", "qa": "it_helpdesk", "retrievers": list(_DEMO_RETRIEVERS),
                  "out": str(out) if out is not None else None}, json_out=json_out, demo=True, history=history,
                 no_history=no_history, report=report)



# --- commands: report and history ----------------------------------------------------------



@app.command("report")
def report_cmd(
    run: str = typer.Argument(..., help="A run folder (from `ragexam run --out DIR`) or a recorded run id."),
    out: Optional[Path] = typer.Option(None, "--out", "-o",
                                       help="HTML file to write (default: RUN/report.html for a folder, "
                                            "report-<id>.html here for a recorded run)."),
    answers: Optional[Path] = typer.Option(None, "--answers",
                                           help="Generated answers / judge results for the missed-question "
                                                "details: JSONL rows with query_id (and pipeline, answer, "
                                                "reasoning, verdict, ground_truth), or a JSON object."),
    history: Optional[Path] = typer.Option(None, "--history", help=_HISTORY_HELP),
) -> None:
    """Write one self-contained HTML report of a run (opens offline; plots, missed questions, settings)."""
    from ragexam.analysis.recording import with_ground_truth
    from ragexam.report.html import read_answers, write_report
    from ragexam.storage.history import resolve_run
    from ragexam.storage.paths import check_output_file

    if out is not None:
        check_output_file(out, option="--out")
    data = resolve_run(run, history)
    if data.is_score:
        from ragexam.errors import InputError

        raise InputError(f"{data.run_id} is a recorded score, not a run; `ragexam report` takes a run. Fix: "
                         f"`ragexam report {data.summary.get('scored_run') or 'RUN'}`, or `ragexam score --run DIR "
                         "... --report FILE.html` for the run's report with the answers.", source=str(run))
    if out is None:
        out = Path(data.source) / "report.html" if Path(run).is_dir() else Path(f"report-{data.run_id}.html")
        check_output_file(out, option="--out")
    path = write_report(with_ground_truth(data.summary), data.per_question, out,
                        answers=read_answers(answers) if answers is not None else None)
    size = path.stat().st_size
    typer.echo(f"wrote {path} ({size / 1024:.0f} KB)")


@app.command("runs")
def runs_cmd(
    history: Optional[Path] = typer.Option(None, "--history", help=_HISTORY_HELP),
    limit: Optional[int] = typer.Option(None, "--limit", "-n", min=1, help="Show the newest N only."),
    record: Optional[Path] = typer.Option(None, "--record", help="Record an existing run folder, then list."),
    delete: Optional[str] = typer.Option(None, "--delete", help="Delete the recorded run with this id."),
    as_json: bool = typer.Option(False, "--json", help="Print the list as JSON."),
) -> None:
    """List the recorded runs (id, date, dataset, pipelines, headline metric)."""
    from ragexam.errors import InputError
    from ragexam.report.console import print_runs
    from ragexam.storage.history import History
    from ragexam.storage.runfolder import read_run_folder

    hist = History(history)
    if record is not None:
        data = read_run_folder(record)
        typer.echo(f"recorded {hist.record_run(data.summary, data.per_question)}", err=as_json)
    if delete is not None:
        if not hist.delete(delete):
            raise InputError(f"has no run {delete!r}; `ragexam runs` lists the recorded ones.",
                             source=str(hist.path), field="--delete")
        typer.echo(f"deleted {delete}", err=as_json)
    entries = hist.list_runs(limit)
    if as_json:
        _print_json([e.to_dict() for e in entries])
    else:
        print_runs(entries, path=str(hist.path))


@app.command("show")
def show_cmd(
    run_id: str = typer.Argument(..., help="A recorded run id (a unique prefix or 'latest' works), or a run folder."),
    history: Optional[Path] = typer.Option(None, "--history", help=_HISTORY_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print the stored summary.json instead."),
) -> None:
    """Print a recorded run again (the tables `ragexam run` printed)."""
    from ragexam.report.console import show_run
    from ragexam.storage.history import resolve_run

    data = resolve_run(run_id, history)
    if as_json:
        _print_json(data.summary)
    else:
        show_run(data.summary)


@app.command("compare")
def compare_cmd(
    run_a: str = typer.Argument(..., help="Run A (the reference): a run folder or a recorded run id."),
    run_b: str = typer.Argument(..., help="Run B (compared against A): a run folder or a recorded run id."),
    pipeline: Optional[str] = typer.Option(None, "--pipeline", "-p",
                                           help="Pipeline to compare (default: every pipeline in both runs)."),
    pipeline_b: Optional[str] = typer.Option(None, "--pipeline-b",
                                             help="Run B's pipeline, when it is named differently from A's."),
    metric: Optional[List[str]] = typer.Option(None, "--metric", "-m",
                                               help="Metric to compare, repeatable (default: all both runs have)."),
    k: Optional[int] = typer.Option(None, "--k", help="Found/missed cutoff for flips (default: run A's miss_k)."),
    seed: Optional[int] = typer.Option(None, "--seed", help="Seed (default: run A's seed)."),
    history: Optional[Path] = typer.Option(None, "--history", help=_HISTORY_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Per-metric differences B − A on the shared questions (paired bootstrap CI, randomization p, Holm)
    and the questions that flipped between found and missed."""
    from ragexam.analysis.compare import compare_runs
    from ragexam.report.console import print_comparison
    from ragexam.storage.history import resolve_run

    a = resolve_run(run_a, history)
    b = resolve_run(run_b, history)
    res = compare_runs(a, b, pipeline=pipeline, pipeline_b=pipeline_b, metrics=metric or None, k=k, seed=seed)
    if as_json:
        _print_json(res.to_dict())
    else:
        print_comparison(res)


@app.command("check")
def check_cmd(
    run: str = typer.Argument(..., help="A run or score folder (`ragexam run/score --out`) or a recorded id."),
    minimum: List[str] = typer.Option(..., "--min", help="Floor METRIC=VALUE, repeatable, e.g. --min hit@5=0.8."),
    pipeline: Optional[str] = typer.Option(None, "--pipeline", "-p", help="Check this pipeline only (default: all)."),
    point: bool = typer.Option(False, "--point", help="Compare the mean, not the 95% CI lower bound, with the floor."),
    history: Optional[Path] = typer.Option(None, "--history", help=_HISTORY_HELP),
) -> None:
    """CI gate: exit 1 when a metric's 95% CI lower bound (or with --point its mean) is below its floor.

    Exit status: 0 all floors met, 1 some floor missed, 2 bad input (e.g. an unknown metric)."""
    from ragexam.analysis.gate import check_run, parse_floor
    from ragexam.report.console import print_gate
    from ragexam.storage.history import resolve_run

    floors = [parse_floor(m) for m in minimum]
    data = resolve_run(run, history)
    results = check_run(data, floors, pipeline=pipeline, point=point)
    print_gate(results)
    if not all(r.passed for r in results):
        raise typer.Exit(code=1)


# --- commands: answer evaluation -----------------------------------------------------------

_JUDGE_HELP = "context_relevance, faithfulness, answer_correctness, abstention"


def _ae_commas(values: Optional[List[str]]) -> Optional[List[str]]:
    if not values:
        return None
    return [p.strip() for v in values for p in v.split(",") if p.strip()]


def _price(text: Optional[str]):
    from ragexam.llm.cost import parse_price

    return parse_price(text)


def _progress(label: str):
    """A progress callback printing to stderr (only when stderr is a terminal)."""
    if not sys.stderr.isatty():
        return None
    state = {"last": -1}

    def cb(done: int, total: int) -> None:
        if total and (done == total or done - state["last"] >= max(1, total // 20)):
            state["last"] = done
            sys.stderr.write(f"\r{label} {done}/{total}" + ("\n" if done == total else ""))
            sys.stderr.flush()

    return cb


def _make_judge(model, base_url, api_key, *, temperature, max_tokens, seed, concurrency, timeout, max_attempts,
                max_retries, response_format, judge_lang, cache_dir, no_cache, retry_unjudged, price):
    from ragexam.metrics.judge import Judge

    return Judge(model, base_url=base_url, api_key=api_key, temperature=temperature, max_tokens=max_tokens,
                 seed=seed, concurrency=concurrency, timeout=timeout, max_attempts=max_attempts,
                 max_retries=max_retries, response_format=response_format, language=judge_lang,
                 cache_dir=str(cache_dir) if cache_dir is not None else None, cache=not no_cache,
                 retry_unjudged=retry_unjudged, price=_price(price))


def _print_plan(plan, console, what: str = "judge") -> None:
    from rich.table import Table


    t = Table(title=f"{what} dry run: {plan.model} at {plan.endpoint} (prompts: {plan.language}, repeat {plan.repeat})")
    for col in ("metric", "judgments", "cached", "shared", "no input", "calls", "est. prompt tok",
                "est. completion tok"):
        t.add_column(col, justify="left" if col == "metric" else "right")
    for m, d in plan.by_metric.items():
        t.add_row(m, str(d["total"]), str(d["cached"]), str(d["shared"]), str(d["skipped"]), str(d["calls"]),
                  str(d["est_prompt_tokens"]), str(d["est_completion_tokens"]))
    t.add_row("total", str(plan.total), str(plan.cached), str(plan.shared), str(plan.skipped), str(plan.calls),
              str(plan.est_prompt_tokens), str(plan.est_completion_tokens), style="bold")
    console.print(t)
    console.print(f"calls to make: {plan.calls} (cached: {plan.cached}); estimated tokens: "
                  f"{plan.est_prompt_tokens} prompt + {plan.est_completion_tokens} completion "
                  f"(ceil(chars/3) of each prompt + a fixed allowance per reply); estimated cost: "
                  f"{fmt.cost(plan.est_cost)}. Nothing was sent.", highlight=False, soft_wrap=True)


def _print_score(report, console, *, list_n: int) -> None:
    from rich.markup import escape
    from rich.table import Table

    from ragexam.analysis.diagnosis import LABELS

    for note in report.notes:
        console.print(f"[yellow]note[/] {escape(note)}", highlight=False, soft_wrap=True)
    missing = {p: n for p, n in report.missing_answers().items() if n}
    if missing:
        console.print(f"[yellow]questions without an answer[/] (listed as unjudged: no_answer): "
                      f"{escape(', '.join(f'{p}: {n}' for p, n in missing.items()))}", highlight=False, soft_wrap=True)
    t = Table(title="text metrics vs ground_truth (answerable questions)")
    for col in ("pipeline", "type", "n", "BLEU", "chrF", "ROUGE-L"):
        t.add_column(col, justify="left" if col in ("pipeline", "type") else "right")
    sigs = {}
    for p in report.pipelines:
        a = report.text[p]
        t.add_row(escape(p), "all", str(a["n"]), fmt.num(a["bleu"]), fmt.num(a["chrf"]), fmt.num(a["rouge_l"]))
        sigs = a.get("signatures", sigs)
        for ty, b in report.text_by_type[p].items():
            if b["n"]:
                t.add_row("", escape(ty), str(b["n"]), fmt.num(b["bleu"]), fmt.num(b["chrf"]), fmt.num(b["rouge_l"]))
    console.print(t)
    for name, s in sigs.items():
        console.print(f"  {name}: {s}", style="dim", highlight=False, soft_wrap=True)

    jr = report.judge_run
    if jr is not None:
        t = Table(title=f"LLM judge: {jr.model} at {jr.endpoint} (prompts: {jr.language}, repeat {jr.repeat})")
        for col in ("pipeline", "metric", "mean", "coverage", "labels", "unjudged (reason: count)"):
            t.add_column(col, justify="right" if col in ("mean", "coverage") else "left")
        for p in report.pipelines:
            for m in report.judge_metrics:
                s = report.judge_summary(p, m)
                cov = f"{s.n_judged}/{s.n}" + (f" ({fmt.percent(s.coverage)})" if s.n else "")
                labels = ", ".join(f"{k}: {v}" for k, v in s.labels.items())
                if s.average_mismatch:
                    labels = (labels + ", " if labels else "") + f"avg mismatch: {s.average_mismatch}"
                t.add_row(escape(p), m, fmt.num(s.mean), cov, labels,
                          ", ".join(f"{k}: {v}" for k, v in s.unjudged.items()) or "-")
        console.print(t)
        u = jr.usage
        console.print(f"judge calls this run: {u['calls']} ({u['requests']} HTTP requests), from cache: {u['cached']}; "
                      f"tokens: {u['prompt_tokens']} prompt + {u['completion_tokens']} completion; cost: "
                      f"{fmt.cost(u['cost_usd'])}", highlight=False, soft_wrap=True)
        for m, s in jr.signatures.items():
            console.print(f"  {m}: {s}", style="dim", highlight=False, soft_wrap=True)
        if report.agreement:
            t = Table(title=f"judge agreement with itself over {fmt.plural(jr.repeat, 'repeat')}")
            for col in ("metric", "units", "exact", "mean |diff|", "kappa", "kappa (quadratic)"):
                t.add_column(col, justify="left" if col == "metric" else "right")
            for m, a in report.agreement.items():
                t.add_row(m, str(a.n_units), fmt.num(a.exact), fmt.num(a.mean_abs_diff), fmt.num(a.kappa),
                          fmt.num(a.kappa_quadratic))
            console.print(t)

    att = report.attribution
    for p in report.pipelines:
        mat = att.matrix(p)
        t = Table(title=f"stage attribution: {p}")
        t.add_column("label")
        for ty in mat:
            t.add_column(escape(ty), justify="right")
        t.add_column("total", justify="right")
        counts = att.counts(p)
        for lab in LABELS:
            t.add_row(lab, *[str(mat[ty][lab]) for ty in mat], str(counts[lab]))
        console.print(t)
        reasons = att.unjudged_reasons(p)
        if reasons:
            console.print("  unjudged: " + escape(", ".join(f"{k}: {v}" for k, v in reasons.items())), highlight=False, soft_wrap=True)
    console.print(f"  signature: {att.signature}", style="dim", highlight=False, soft_wrap=True)

    if list_n:
        bad = [r for r in report.rows if r.stage.label not in ("ok", "abstained_ok")]
        if bad:
            t = Table(title=f"questions to read ({min(len(bad), list_n)} of {len(bad)} not ok; all in per_answer.csv)")
            has_note = any(r.record is not None and "note" in r.record.metadata for r in bad)
            for col in ("pipeline", "query_id", "type", "label", "first_rank", "verdict") + (
                    ("note",) if has_note else ()) + ("answer",):
                t.add_column(col, overflow="fold")
            for r in bad[:list_n]:
                s = r.stage
                verdict = (s.inputs.correct_detail or "") if r.question.answerable else (
                    "abstained" if s.inputs.abstained else ("answered" if s.inputs.abstained is False else ""))
                if s.reason:
                    verdict = (verdict + "; " if verdict else "") + s.reason
                if s.inputs.faithful is False:
                    verdict += "; unfaithful"
                ans = (r.answer or "")
                note = (str(r.record.metadata.get("note", "")),) if has_note and r.record is not None else (
                    ("",) if has_note else ())
                t.add_row(escape(r.pipeline), r.query_id, escape(r.question.type or ""), s.label,
                          str(r.first_rank) if r.first_rank is not None else "-", escape(verdict),
                          *[escape(n) for n in note], escape(ans[:80] + ("…" if len(ans) > 80 else "")))
            console.print(t)


@app.command("score")
def score_cmd(
    qa: str = typer.Option(..., "--qa", help="Question set (JSONL) or a bundled name (it_helpdesk)."),
    answers: str = typer.Option(..., "--answers", help="Answers JSONL (query_id, answer, optional contexts, "
                                                       "pipeline), or a bundled name (it_helpdesk)."),
    run: Optional[Path] = typer.Option(None, "--run", help="Folder of `ragexam run --out DIR`: retrieval ranks "
                                                           "(first_rank) for stage attribution."),
    pipeline: Optional[str] = typer.Option(None, "--pipeline", help="Pipeline of the run that answers without a "
                                                                    "'pipeline' field belong to (default: the first)."),
    corpus: Optional[str] = typer.Option(None, "--corpus", help="Corpus of the run (default: the one in its "
                                                                "summary.json); only for a ragexam-run/1 folder, to "
                                                                "rebuild its chunk texts."),
    k: Optional[int] = typer.Option(None, "--k", help="Evidence counts as retrieved when first_rank <= K (default: "
                                                      "the answers' k, else the run's miss_k, else 5)."),
    correct_if: Optional[str] = typer.Option(None, "--correct-if", help="Without a judge: an answer is correct when "
                                                                        "e.g. chrf>=0.5 (chrf, bleu, rouge_l; join "
                                                                        "with ',')."),
    abstain_phrases: Optional[Path] = typer.Option(None, "--abstain-phrases", help="File of phrases (one per line) "
                                                   "that mark an abstention (default: a built-in Korean+English list)."),
    bleu_tokenize: str = typer.Option("auto", "--bleu-tokenize", help="auto (ko-kiwi for Korean, else 13a), none, "
                                                                      "13a, intl, char, ko-mecab, ko-kiwi."),
    judge_model: Optional[str] = typer.Option(None, "--judge-model", help="Judge model on an OpenAI-compatible "
                                                                          "endpoint (e.g. gpt-4o-mini)."),
    base_url: Optional[str] = typer.Option(None, "--base-url", help="Endpoint root, e.g. http://localhost:11434/v1 "
                                                                    "(default $OPENAI_BASE_URL, else OpenAI)."),
    api_key: Optional[str] = typer.Option(None, "--api-key", help="API key (default $OPENAI_API_KEY; prefer the "
                                                                  "variable: arguments show in process lists)."),
    metric: Optional[List[str]] = typer.Option(None, "--metric", "-m", help=f"Judge metric, repeatable: {_JUDGE_HELP} "
                                                                            "(default: all)."),
    repeat: int = typer.Option(1, "--repeat", help="Judge every item N times and report the judge's agreement."),
    concurrency: int = typer.Option(4, "--concurrency", help="Judge calls in flight at once."),
    temperature: float = typer.Option(0.0, "--temperature", help="Judge temperature."),
    max_tokens: int = typer.Option(1024, "--max-tokens", help="Completion limit per judge reply."),
    seed: Optional[int] = typer.Option(None, "--seed", help="Seed passed to the endpoint (if it honours one)."),
    timeout: float = typer.Option(60.0, "--timeout", help="Seconds per HTTP request."),
    max_attempts: int = typer.Option(3, "--max-attempts", help="Replies per judgment before it is unjudged."),
    max_retries: int = typer.Option(4, "--max-retries", help="Retries on 429/5xx/timeouts per request."),
    response_format: str = typer.Option("auto", "--response-format", help="auto, json_schema, json_object or none."),
    judge_lang: str = typer.Option("auto", "--judge-lang", help="Prompt language: auto (Hangul share), ko, en."),
    cache_dir: Optional[Path] = typer.Option(None, "--cache-dir", help="LLM cache directory (default "
                                                                       "$RAGEXAM_CACHE_DIR or ~/.cache/ragexam)."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Do not read or write the LLM cache."),
    retry_unjudged: bool = typer.Option(False, "--retry-unjudged", help="Re-judge cached unjudged results."),
    price: Optional[str] = typer.Option(None, "--price", help="USD per 1M tokens as IN,OUT (overrides the table)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the judge calls and estimated tokens; send nothing."),
    out: Optional[Path] = typer.Option(None, "--out", help="Write score.json, per_answer.csv, judgments.jsonl here."),
    json_out: bool = typer.Option(False, "--json", help="Print score.json on stdout instead of tables."),
    list_n: int = typer.Option(30, "--list", help="List up to N questions that are not ok (0: none)."),
    report_html: Optional[Path] = typer.Option(None, "--report", help="Write the HTML report of the --run folder "
                                                                      "with these answers, verdicts, judge reasoning "
                                                                      "and stage attribution to FILE.html."),
    history: Optional[Path] = typer.Option(None, "--history", help=_HISTORY_HELP),
    no_history: bool = typer.Option(False, "--no-history", help="Do not record this score in the history database."),
    min_coverage: Optional[float] = typer.Option(None, "--min-coverage", help="Exit 1 when a judge metric judged "
                                                 "less than this fraction (0-1) of its items. Without it, exit 1 only "
                                                 "when nothing at all was judged."),
) -> None:
    """Score generated answers: BLEU/chrF/ROUGE-L vs ground_truth, LLM-judge metrics with coverage, and which
    stage failed per question (retrieval_miss, generation_miss, lucky, hallucinated, ...)."""
    from ragexam.analysis.answers import load_answers
    from ragexam.analysis.scoring import check_min_coverage, plan_judging, prepare_rows, save_score, score_answers
    from ragexam.analysis.verdicts import load_phrases, parse_correct_if
    from ragexam.data.loaders import load_qa
    from ragexam.errors import InputError
    from ragexam.storage.paths import check_output_dir, check_output_file, history_path
    from ragexam.storage.runfolder import read_run_folder

    if out is not None:
        check_output_dir(out, option="--out")
    if report_html is not None:
        check_output_file(report_html, option="--report")
    if not no_history and not dry_run:
        check_output_file(history or history_path(), option="--history")
    if report_html is not None and run is None:
        raise InputError("--report needs --run DIR: the report is the HTML report of that retrieval run (from "
                         "`ragexam run --out DIR`) with these answers added; pass --run, or drop --report",
                         source="ragexam score", field="report")
    if min_coverage is not None:
        check_min_coverage(min_coverage)
        if judge_model is None:
            raise InputError("--min-coverage applies to an LLM judge; pass --judge-model too", source="ragexam score",
                             field="min_coverage")
    questions = load_qa(qa)
    records = load_answers(answers)
    run_info = read_run_folder(run) if run is not None else None
    cond = parse_correct_if(correct_if) if correct_if is not None else None
    phrases = None
    if abstain_phrases is not None:
        try:
            phrases = load_phrases(abstain_phrases.read_text(encoding="utf-8").splitlines())
        except OSError as err:
            raise InputError(f"cannot read: {err.strerror or err}", source=str(abstain_phrases)) from None
    judge = None
    if judge_model is not None:
        judge = _make_judge(judge_model, base_url, api_key, temperature=temperature, max_tokens=max_tokens, seed=seed,
                            concurrency=concurrency, timeout=timeout, max_attempts=max_attempts,
                            max_retries=max_retries, response_format=response_format, judge_lang=judge_lang,
                            cache_dir=cache_dir, no_cache=no_cache, retry_unjudged=retry_unjudged, price=price)
    elif dry_run or metric or repeat != 1:
        raise InputError("needs --judge-model (the judge options apply to an LLM judge)", source="ragexam score",
                         field="judge_model")
    notes: List[str] = []
    rows = prepare_rows(questions, records, answers_source=answers, run=run_info, pipeline=pipeline, k=k,
                        corpus=corpus, notes=notes)
    metrics = _ae_commas(metric) or None
    if dry_run:
        from ragexam.metrics.judge.prompts import METRICS

        plan = plan_judging(rows, judge, metrics or METRICS, repeat=repeat)
        if json_out:
            _print_json(plan.to_dict())
        else:
            _print_plan(plan, _stdout())
        return
    report = score_answers(questions, records, answers_source=answers, run=run_info, pipeline=pipeline, k=k,
                           corpus=corpus, judge=judge, judge_metrics=metrics, repeat=repeat, correct_if=cond,
                           abstain_phrases=phrases, bleu_tokenize=bleu_tokenize, rows=rows, notes=notes,
                           progress=_progress("judging") if not json_out else None, min_coverage=min_coverage)
    if out is not None:
        save_score(report, out)
    lines = []
    if not no_history:
        from ragexam.analysis.recording import record_score
        from ragexam.storage.history import History

        hist_path = History(history).path
        score_id = record_score(report, run_info.summary if run_info is not None else None, hist_path)
        lines.append(f"Recorded as {score_id} in {hist_path} (ragexam show {score_id}).")
    if report_html is not None:
        from ragexam.analysis.recording import score_report_inputs
        from ragexam.report.html import write_report

        summary, per_question, shown = score_report_inputs(run_info, report)
        path = write_report(summary, per_question, report_html, answers=shown)
        lines.append(f"Wrote the HTML report of {run} with these answers to {path}.")
    failures = report.coverage_failures()
    if json_out:
        _print_json(report.to_dict())
        for line in lines + [f"coverage: {f}" for f in failures]:
            sys.stderr.write(line + "\n")
    else:
        console = _stdout()
        _print_score(report, console, list_n=list_n)
        if out is not None:
            console.print("Wrote score.json, per_answer.csv" + (", judgments.jsonl" if judge is not None else "")
                          + f" to {out}.", highlight=False, markup=False, soft_wrap=True)
        for line in lines:
            console.print(line, highlight=False, markup=False, soft_wrap=True)
        for f in failures:
            console.print(f"[red]coverage:[/] {f}", highlight=False, soft_wrap=True)
    if failures:
        raise typer.Exit(1)


@app.command("answer")
def answer_cmd(
    run: Path = typer.Option(..., "--run", help="Folder of `ragexam run --out DIR` (its top_ids are the contexts)."),
    model: str = typer.Option(..., "--model", help="Generator model on an OpenAI-compatible endpoint."),
    out: Path = typer.Option(..., "--out", help="Answers JSONL to write (query_id, pipeline, answer, contexts)."),
    qa: Optional[str] = typer.Option(None, "--qa", help="Question set (default: the run's)."),
    corpus: Optional[str] = typer.Option(None, "--corpus", help="Corpus (default: the run's); only for a "
                                                                "ragexam-run/1 folder, which does not store its chunk "
                                                                "texts: re-chunked with each pipeline's chunker."),
    pipeline: Optional[List[str]] = typer.Option(None, "--pipeline", help="Pipeline(s) to answer for (default: all)."),
    k: int = typer.Option(5, "--k", help="Chunks given to the generator (1-10)."),
    template: Optional[Path] = typer.Option(None, "--template", help="Prompt template file with {question} and "
                                                                     "{contexts} (default: a built-in one)."),
    base_url: Optional[str] = typer.Option(None, "--base-url", help="Endpoint root (default $OPENAI_BASE_URL)."),
    api_key: Optional[str] = typer.Option(None, "--api-key", help="API key (default $OPENAI_API_KEY)."),
    concurrency: int = typer.Option(4, "--concurrency", help="Calls in flight at once."),
    temperature: float = typer.Option(0.0, "--temperature", help="Sampling temperature."),
    max_tokens: int = typer.Option(512, "--max-tokens", help="Completion limit per answer."),
    seed: Optional[int] = typer.Option(None, "--seed", help="Seed passed to the endpoint."),
    timeout: float = typer.Option(60.0, "--timeout", help="Seconds per HTTP request."),
    max_retries: int = typer.Option(4, "--max-retries", help="Retries on 429/5xx/timeouts per request."),
    lang: str = typer.Option("auto", "--lang", help="Default template language: auto, ko, en."),
    cache_dir: Optional[Path] = typer.Option(None, "--cache-dir", help="LLM cache directory."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Do not read or write the LLM cache."),
    price: Optional[str] = typer.Option(None, "--price", help="USD per 1M tokens as IN,OUT."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the calls and estimated tokens; send nothing."),
) -> None:
    """Generate answers from each pipeline's top-k retrieved chunks with an OpenAI-compatible chat model."""
    from ragexam.analysis.answers import write_answers
    from ragexam.analysis.generation import answer_tasks, generate_answers, load_template, plan_answers
    from ragexam.data.loaders import load_corpus, load_qa
    from ragexam.errors import InputError
    from ragexam.llm.cache import LLMCache
    from ragexam.llm.client import LLMClient
    from ragexam.llm.cost import cost_usd, price_for
    from ragexam.storage.paths import check_output_file
    from ragexam.storage.runfolder import read_run_folder

    if not dry_run:
        check_output_file(out, option="--out")
    info = read_run_folder(run)
    cfg = info.summary.get("config") or {}
    qa_ref = qa or cfg.get("qa")
    corpus_ref = corpus or cfg.get("corpus")
    if not qa_ref:
        raise InputError("the run does not record its question set; pass --qa", source=str(run))
    questions = load_qa(qa_ref)
    docs = None
    if not info.has_chunk_texts:  # a ragexam-run/1 folder: its chunk texts are rebuilt from the corpus
        if not corpus_ref:
            raise InputError("the run does not record its corpus; pass --corpus", source=str(run))
        docs = load_corpus(corpus_ref)
    tmpl = load_template(template) if template is not None else None
    client = LLMClient(model, base_url=base_url, api_key=api_key, timeout=timeout, max_retries=max_retries,
                       concurrency=concurrency, temperature=temperature, max_tokens=max_tokens, seed=seed)
    tasks, _, sha = answer_tasks(questions, info, docs, model=model, endpoint=client.endpoint,
                                 pipelines=pipeline or None, k=k, template=tmpl, language=lang,
                                 temperature=temperature, max_tokens=max_tokens, seed=seed)
    cache = None if no_cache else LLMCache(str(cache_dir) if cache_dir is not None else None)
    pr = price_for(model, client.endpoint, _price(price))
    console = _stdout()
    if docs is not None:
        console.print(f"note: {run} ({info.format}) does not store its chunk texts; they were rebuilt by re-chunking "
                      f"{corpus_ref} with each pipeline's chunker (run folders from ragexam-run/2 on store them).",
                      highlight=False, markup=False, soft_wrap=True)
    if dry_run:
        plan = plan_answers(tasks, cache)
        console.print(f"answer dry run: {fmt.plural(plan['total'], 'answer')}, {plan['cached']} cached, "
                      f"{plan['shared']} share a prompt with another, calls to make: "
                      f"{plan['calls']}; estimated tokens: {plan['est_prompt_tokens']} prompt + "
                      f"{plan['est_completion_tokens']} completion (ceil(chars/3) + 250 per answer); estimated cost: "
                      f"{fmt.cost(cost_usd(plan['est_prompt_tokens'], plan['est_completion_tokens'], pr))}. "
                      "Nothing was sent.", highlight=False, soft_wrap=True)
        return
    records, usage = generate_answers(tasks, client, cache=cache, k=k, template_sha=sha, temperature=temperature,
                                      max_tokens=max_tokens, seed=seed, concurrency=concurrency,
                                      progress=_progress("answering"))
    write_answers(records, out)
    failed = sum(1 for r in records if r.answer is None)
    console.print(f"Wrote {fmt.plural(len(records), 'answer')} ({failed} failed, see their 'error') to {out}. "
                  f"Calls: {usage['calls']} "
                  f"(cached: {usage['cached']}); tokens: {usage['prompt_tokens']} prompt + {usage['completion_tokens']} "
                  f"completion; cost: {fmt.cost(cost_usd(usage['prompt_tokens'], usage['completion_tokens'], pr))}.",
                  highlight=False, markup=False, soft_wrap=True)
    if failed:
        raise typer.Exit(1)


@app.command("judge-agreement")
def judge_agreement_cmd(
    qa: str = typer.Option(..., "--qa", help="Question set whose questions carry 'human' labels, e.g. "
                                             "\"human\": {\"answer_correctness\": 4}."),
    answers: str = typer.Option(..., "--answers", help="The answers the humans labelled (a 'human' object on an "
                                                       "answer line overrides the question's)."),
    judge_model: str = typer.Option(..., "--judge-model", help="Judge model."),
    metric: Optional[List[str]] = typer.Option(None, "--metric", "-m", help=f"Metric(s) to compare: {_JUDGE_HELP} "
                                                                            "(default: those with human labels)."),
    weights: str = typer.Option("quadratic", "--weights", help="Weighted kappa for the 1-5 scales: none, linear, "
                                                               "quadratic."),
    top: int = typer.Option(10, "--top", help="Largest disagreements to list."),
    run: Optional[Path] = typer.Option(None, "--run", help="Run folder (contexts for context_relevance/faithfulness)."),
    pipeline: Optional[str] = typer.Option(None, "--pipeline", help="Pipeline of the run the answers belong to."),
    corpus: Optional[str] = typer.Option(None, "--corpus", help="Corpus of the run."),
    base_url: Optional[str] = typer.Option(None, "--base-url", help="Endpoint root (default $OPENAI_BASE_URL)."),
    api_key: Optional[str] = typer.Option(None, "--api-key", help="API key (default $OPENAI_API_KEY)."),
    concurrency: int = typer.Option(4, "--concurrency", help="Judge calls in flight at once."),
    temperature: float = typer.Option(0.0, "--temperature", help="Judge temperature."),
    max_tokens: int = typer.Option(1024, "--max-tokens", help="Completion limit per judge reply."),
    seed: Optional[int] = typer.Option(None, "--seed", help="Seed passed to the endpoint."),
    timeout: float = typer.Option(60.0, "--timeout", help="Seconds per HTTP request."),
    max_attempts: int = typer.Option(3, "--max-attempts", help="Replies per judgment before it is unjudged."),
    max_retries: int = typer.Option(4, "--max-retries", help="Retries on 429/5xx/timeouts per request."),
    response_format: str = typer.Option("auto", "--response-format", help="auto, json_schema, json_object or none."),
    judge_lang: str = typer.Option("auto", "--judge-lang", help="Prompt language: auto, ko, en."),
    cache_dir: Optional[Path] = typer.Option(None, "--cache-dir", help="LLM cache directory."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Do not read or write the LLM cache."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the judge calls and estimated tokens; send nothing."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON instead of tables."),
) -> None:
    """Compare LLM-judge scores with human labels: Cohen's kappa (weighted), Spearman, and the largest
    disagreements to read."""
    from rich.markup import escape
    from rich.table import Table

    from ragexam.analysis.answers import load_answers
    from ragexam.analysis.judge_agreement import check_human_value, human_agreement
    from ragexam.analysis.scoring import judge_jobs, prepare_rows
    from ragexam.data.loaders import load_qa
    from ragexam.errors import InputError
    from ragexam.metrics.judge.prompts import METRICS

    w = None if weights == "none" else weights
    questions = load_qa(qa)
    records = load_answers(answers)
    from ragexam.storage.runfolder import read_run_folder

    rows = prepare_rows(questions, records, answers_source=answers, run=read_run_folder(run) if run is not None else None,
                        pipeline=pipeline, corpus=corpus)
    human: dict = {}
    for r in rows:
        if r.record is None:
            continue
        qh = r.question.metadata.get("human")
        if qh is not None and not isinstance(qh, dict):
            raise InputError('expected an object such as {"answer_correctness": 4}', source=str(questions.source),
                             line=r.question.line, field="human")
        labels = dict(qh or {})
        labels.update(r.record.human or {})
        for m, v in labels.items():
            check_human_value(m, v, source=str(questions.source), line=r.question.line)
            human.setdefault(m, {})[r.item_id] = v
    wanted = _ae_commas(metric) or [m for m in METRICS if m in human]
    if not wanted:
        raise InputError("no question or answer has a 'human' object; expected e.g. \"human\": "
                         "{\"answer_correctness\": 4} on the questions that were labelled", source=str(questions.source),
                         field="human")
    judge = _make_judge(judge_model, base_url, api_key, temperature=temperature, max_tokens=max_tokens, seed=seed,
                        concurrency=concurrency, timeout=timeout, max_attempts=max_attempts, max_retries=max_retries,
                        response_format=response_format, judge_lang=judge_lang, cache_dir=cache_dir,
                        no_cache=no_cache, retry_unjudged=False, price=None)
    labelled = {m: [r for r in rows if r.item_id in human.get(m, {})] for m in wanted}
    jobs = {m: judge_jobs(labelled[m], [m])[m] for m in wanted}
    if dry_run:
        plan = judge.plan(None, jobs)
        _print_json(plan.to_dict()) if json_out else _print_plan(plan, _stdout())
        return
    jr = judge.run(None, jobs, progress=_progress("judging") if not json_out else None)
    results = {m: human_agreement(jr.items(m), human.get(m, {}), m, weights=w, top=top) for m in wanted}
    if json_out:
        _print_json({"judge": {"model": jr.model, "endpoint": jr.endpoint, "signatures": jr.signatures,
                               "usage": jr.usage}, "metrics": {m: a.to_dict() for m, a in results.items()}})
        return
    console = _stdout()
    t = Table(title=f"judge {jr.model} vs human labels")
    for col in ("metric", "labelled", "compared", "units", "exact", "kappa", "weighted kappa", "spearman",
                "mean |diff|", "unjudged"):
        t.add_column(col, justify="left" if col in ("metric", "unjudged") else "right")
    for m, a in results.items():
        t.add_row(m, str(a.n_labelled), str(a.n_compared), str(a.n_units), fmt.num(a.exact), fmt.num(a.kappa),
                  (fmt.num(a.kappa_weighted) + f" ({a.weights})") if a.weights else "-", fmt.num(a.spearman),
                  fmt.num(a.mean_abs_diff), ", ".join(f"{k}: {v}" for k, v in a.unjudged.items()) or "-")
    console.print(t)
    by_id = {r.item_id: r for r in rows}
    for m, a in results.items():
        for n in a.notes:
            console.print(f"[yellow]note[/] {m}: {escape(n)}", highlight=False, soft_wrap=True)
        if not a.disagreements:
            continue
        t = Table(title=f"{m}: largest disagreements (judge vs human)")
        for col in ("query_id", "unit", "judge", "human", "question / answer", "judge reasoning"):
            t.add_column(col, overflow="fold")
        for d in a.disagreements:
            r = by_id[d.item_id]
            t.add_row(escape(r.query_id), str(d.unit + 1) if m == "context_relevance" else "", str(d.judge),
                      str(d.human), escape(r.question.question[:60] + " / " + (r.answer or "")[:80]),
                      escape((d.reasoning or "")[:160]))
        console.print(t)
    for m, s in jr.signatures.items():
        console.print(f"  {m}: {s}", style="dim", highlight=False, soft_wrap=True)


# --- commands: question generation ----------------------------------------------------------------------


@app.command("generate")
def generate_cmd(
    corpus: str = typer.Option(..., "--corpus", help="Corpus (JSONL or .csv) or a bundled name (it_helpdesk)."),
    out: Optional[Path] = typer.Option(None, "--out", help="Question set to write (JSONL); the rejects, the card and "
                                                           "the review sheet go next to it. Required unless --dry-run."),
    n: int = typer.Option(..., "-n", "--n", help="Questions wanted."),
    model: str = typer.Option(..., "--model", help="Generator model on an OpenAI-compatible endpoint."),
    base_url: Optional[str] = typer.Option(None, "--base-url", help="Endpoint root (default $OPENAI_BASE_URL, else "
                                                                    "OpenAI)."),
    api_key: Optional[str] = typer.Option(None, "--api-key", help="API key (default $OPENAI_API_KEY)."),
    mix: Optional[str] = typer.Option(None, "--mix", help="Target mix as KIND=WEIGHT pairs (default "
                                                          "meaning=0.4,lexical=0.35,multi=0.15,out_of_corpus=0.1)."),
    kind: Optional[List[str]] = typer.Option(None, "--kind", help="Add a kind: NAME=INSTRUCTION (repeatable); use "
                                                                  "NAME in --mix."),
    per_call: int = typer.Option(3, "--per-call", help="Questions asked for per call (1-10)."),
    lang: str = typer.Option("auto", "--lang", help="Prompt language: auto (Hangul share of the corpus), ko, en."),
    prompt: Optional[Path] = typer.Option(None, "--prompt", help="A prompt file replacing the bundled one "
                                                                 "(see docs/generate.md)."),
    judge_model: Optional[str] = typer.Option(None, "--judge-model", help="Model of the LLM checks (default: "
                                                                          "--model)."),
    retriever: str = typer.Option("bm25", "--retriever", help="Retriever for related sections and the "
                                                              "out-of-corpus search."),
    ooc_top: int = typer.Option(5, "--ooc-top", help="Sections retrieved per out-of-corpus candidate."),
    ooc_max_relevance: int = typer.Option(3, "--ooc-max-relevance", help="Highest judged relevance (1-5) a top "
                                                                         "section may have for an out-of-corpus "
                                                                         "question."),
    ambiguous: str = typer.Option("join", "--ambiguous", help="Evidence also found in other documents: join (they "
                                                              "become relevant) or drop (reject the question)."),
    dedup_at: float = typer.Option(0.5, "--dedup-at", help="Character-bigram Jaccard at which a question is a "
                                                           "near-duplicate."),
    section_chars: int = typer.Option(1500, "--section-chars", help="Longest passage shown to the model."),
    seed: int = typer.Option(12345, "--seed", help="Sampling seed (also sent to the endpoint)."),
    max_passes: int = typer.Option(30, "--max-passes", help="Passes of calls at most."),
    max_calls: Optional[int] = typer.Option(None, "--max-calls", help="Calls this run may make (generation and "
                                                                      "checks; cached results are free)."),
    budget: Optional[float] = typer.Option(None, "--budget", help="USD this run may spend (needs a known price)."),
    price: Optional[str] = typer.Option(None, "--price", help="USD per 1M tokens as IN,OUT."),
    id_prefix: str = typer.Option("gen", "--id-prefix", help="Query ids are PREFIX_0001, ..."),
    concurrency: int = typer.Option(4, "--concurrency", help="Calls in flight at once."),
    temperature: float = typer.Option(0.7, "--temperature", help="Generator temperature (the checks use 0)."),
    max_tokens: int = typer.Option(2048, "--max-tokens", help="Completion limit per reply."),
    timeout: float = typer.Option(60.0, "--timeout", help="Seconds per HTTP request."),
    max_retries: int = typer.Option(4, "--max-retries", help="Retries on 429/5xx/timeouts per request."),
    max_attempts: int = typer.Option(3, "--max-attempts", help="Replies per call before it counts as malformed."),
    response_format: str = typer.Option("auto", "--response-format", help="auto, json_schema, json_object or none."),
    cache_dir: Optional[Path] = typer.Option(None, "--cache-dir", help="LLM cache directory."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Do not read or write the LLM cache (no resume)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the calls and estimated cost; send nothing."),
    json_out: bool = typer.Option(False, "--json", help="Print the card (or the dry run) as JSON."),
) -> None:
    """Generate a question set from a corpus: every evidence string verified verbatim in the corpus, types measured,
    rejections counted by reason. Exits 1 when fewer than N questions passed."""
    from ragexam.analysis.generate.api import generate, plan
    from ragexam.errors import InputError

    kinds = {}
    for spec in kind or []:
        name, sep, text = spec.partition("=")
        if not sep:
            raise InputError(f"received {spec!r}; expected NAME=INSTRUCTION", source="--kind", field="kind")
        kinds[name.strip()] = text
    options = dict(mix=mix, kinds=kinds, per_call=per_call, language=lang, prompt=str(prompt) if prompt else None,
                   retriever=retriever, ooc_top=ooc_top, ooc_max_relevance=ooc_max_relevance, ambiguous=ambiguous,
                   dedup_at=dedup_at, section_chars=section_chars, seed=seed, max_passes=max_passes,
                   max_calls=max_calls, budget=budget, id_prefix=id_prefix, max_attempts=max_attempts,
                   base_url=base_url, api_key=api_key, concurrency=concurrency, temperature=temperature,
                   max_tokens=max_tokens, timeout=timeout, max_retries=max_retries, response_format=response_format,
                   cache=not no_cache, cache_dir=str(cache_dir) if cache_dir is not None else None, price=_price(price))
    from ragexam.report.console_generate import print_generate, print_generate_plan

    if dry_run:
        p = plan(corpus, n, model=model, judge_model=judge_model, **options)
        if json_out:
            _print_json(p.to_dict())
        else:
            print_generate_plan(p, _stdout())
        return
    if out is None:
        raise InputError("needs --out FILE.jsonl (or --dry-run)", source="ragexam generate", field="out")
    bars = {}

    def progress(label: str, done: int, total: int) -> None:
        if label not in bars:
            bars[label] = _progress(label)
        if bars[label] is not None:
            bars[label](done, total)

    result = generate(corpus, n, model=model, out=out, judge_model=judge_model, progress=progress, **options)
    from ragexam.analysis.generate.output import side_paths

    if json_out:
        _print_json(dict(result.card, files={k: str(v) for k, v in side_paths(out).items()}))
    else:
        print_generate(result, _stdout(), side_paths(out))
    if result.shortfall:
        raise typer.Exit(1)


review_app = typer.Typer(help="Apply a person's review of a generated question set.", no_args_is_help=True)
app.add_typer(review_app, name="review")


@review_app.command("apply")
def review_apply_cmd(
    qa: Path = typer.Option(..., "--qa", help="The generated set (JSONL) the sheet reviews."),
    out: Path = typer.Option(..., "--out", help="Reviewed set to write (JSONL)."),
    review: Optional[Path] = typer.Option(None, "--review", help="The edited review sheet (default: the set's "
                                                                 ".review.csv)."),
    corpus: Optional[str] = typer.Option(None, "--corpus", help="Corpus to check edited questions against "
                                                                "(default: the one in the set's card)."),
    pending: str = typer.Option("keep", "--pending", help="Rows still pending: keep or drop."),
    json_out: bool = typer.Option(False, "--json", help="Print what happened as JSON."),
) -> None:
    """Keep accepted questions (with their verification records), drop rejected ones, check edited ones again."""
    from ragexam.analysis.generate.review import apply_review
    from ragexam.report.console_generate import print_review

    result = apply_review(qa, review, out, corpus=corpus, pending=pending)
    if json_out:
        _print_json(dict(result.to_dict(), out=str(out)))
    else:
        print_review(result, _stdout(), out)


def main(argv: Optional[List[str]] = None) -> None:
    """Console-script entry point."""
    from ragexam.errors import RagexamError

    try:
        app(args=argv, prog_name="ragexam")
    except RagexamError as err:
        from rich.console import Console

        from rich.text import Text

        Console(stderr=True, soft_wrap=True).print(Text.assemble(("error: ", "bold red"), str(err)), highlight=False)
        sys.exit(2)


if __name__ == "__main__":  # pragma: no cover
    main()
