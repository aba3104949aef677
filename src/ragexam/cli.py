"""The ``ragexam`` command line: options in, one :mod:`ragexam.api` call, rendering out.

Shared option groups (and the one ``app``) are declared once in :mod:`ragexam.cli_options`; the answer commands
live in :mod:`ragexam.cli_answers` and question generation in :mod:`ragexam.cli_generate`, registered on the same
``app``.  Commands import their work lazily, so
``ragexam --help`` stays fast.  :class:`ragexam.errors.RagexamError` is printed as one message on stderr with
exit status 2; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import List, Optional

import typer

from ragexam.cli_options import (ApiKey, app, BaseUrl, BootSeed, Chunkers, commas, ConfigFile, console, ConvertOut,
                                 ConvertTo, CorpusOpt, Cutoffs, Depth, Headers, HistoryOpt, Hyps, IgnorePunct,
                                 JsonOut, late_help, Lowercase, MissK, NoHistory, notes, Overlap, Permutations, Price,
                                 print_json, QaOpt, Queries, Refs, Relevance, ReportOpt, Resamples, Retrieved,
                                 Retrievers, RunOut, Split, Workers, ExecutorOpt)
from ragexam.data.chunking import DEFAULT_CHUNKER



def _print_version(value: bool) -> None:
    if value:
        from ragexam import __version__

        typer.echo(f"ragexam {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(False, "--version", help="Print the version and exit.", is_eager=True,
                                       callback=_print_version, expose_value=False)) -> None:
    pass  # --version is handled by its callback, before a command is required


# --- ranking metrics and question sets -----------------------------------------------------------------------


@app.command()
def evaluate(
    qrels: str = typer.Option(..., "--qrels", help="TREC qrels file ('qid 0 docid rel', or a header line and "
                                                   "'qid docid rel'), or a bundled name (lecture)."),
    run: str = typer.Option(..., "--run", help="TREC run file ('qid Q0 docid rank score tag'), or a bundled name."),
    metric: Optional[List[str]] = typer.Option(None, "--metric", "-m", help=late_help("evaluate", "metric",
                                                                 "ragexam.metrics.ranking.registry:metric_help")),
    json_out: JsonOut = False,
    trec_compat: bool = typer.Option(False, "--trec-compat", help="Reproduce trec_eval: drop qrels queries absent "
                                     "from the run and score queries without relevant judgments as 0."),
    relevance_level: int = typer.Option(1, "--relevance-level", "-l", help="Minimum grade that counts as relevant "
                                        "for binary metrics (trec_eval -l)."),
) -> None:
    """Evaluate a TREC run against TREC qrels (numbers identical to trec_eval)."""
    from ragexam.api import evaluate_trec

    res = evaluate_trec(qrels, run, metric, relevance_level=relevance_level, trec_compat=trec_compat)
    for warning in res.warnings:
        sys.stderr.write(f"warning: {warning}\n")
    if json_out:  # one line: an indent forces Python's slow JSON encoder (0.3 s on 10k queries)
        sys.stdout.write(res.to_json() + "\n")
    else:
        from ragexam.report.console_data import print_ranking_result

        print_ranking_result(res, f"{run} vs {qrels}", console())


@app.command("validate")
def validate_cmd(
    corpus: str = typer.Option(..., "--corpus", help="Corpus file (JSONL, or .csv) or a bundled dataset name."),
    qa: Optional[str] = typer.Option(None, "--qa", help="QA file (JSONL) or a bundled dataset name."),
    ignore_punctuation: bool = typer.Option(False, "--ignore-punctuation", help="Ignore punctuation when matching "
                                                                                "evidence strings."),
    json_out: JsonOut = False, split: Split = None, relevance: Relevance = None,
) -> None:
    """Check a corpus and a QA set; print every problem, a count by kind, and what `ragexam run` would grade.

    Exits 1 if any error-level problem was found (also: the run would refuse), 0 otherwise (warnings allowed).
    """
    from ragexam.api import validate

    report = validate(corpus, qa, ignore_punctuation=ignore_punctuation, split=split, relevance=relevance)
    if json_out:
        print_json(report.to_dict())
    else:
        from ragexam.report.console_data import print_validation

        print_validation(report, console(), with_questions=qa is not None)
    raise typer.Exit(0 if report.ok else 1)


@app.command("datasets")
def datasets_cmd(json_out: JsonOut = False) -> None:
    """List the bundled question sets (usable as --corpus NAME --qa NAME) with their sizes."""
    from ragexam.api import datasets as list_datasets

    infos = list_datasets()
    if json_out:
        return print_json([i.to_dict() for i in infos])
    from ragexam.report.console_data import print_datasets

    print_datasets(infos, console())


@app.command("evidence-coverage")
def evidence_coverage_cmd(
    corpus: str = typer.Option(..., "--corpus", help="Corpus file or bundled dataset name."),
    qa: str = typer.Option(..., "--qa", help="QA file or bundled dataset name."),
    chunker: str = typer.Option(DEFAULT_CHUNKER, "--chunker", help="Chunker spec, e.g. chars:400:80, sentences:300; "
                                "the default is run's, so the check predicts the chunks run grades (whole: one chunk "
                                "per document)."),
    ignore_punctuation: bool = typer.Option(False, "--ignore-punctuation", help="Ignore punctuation when matching "
                                                                                "evidence strings."),
    json_out: JsonOut = False,
) -> None:
    """Check that every evidence string is inside some chunk; report the chunk boundaries that cut.

    Exits 1 if some evidence string is contained whole by no chunk, 0 otherwise.
    """
    from ragexam.api import evidence_coverage

    cov = evidence_coverage(corpus, qa, chunker, ignore_punctuation=ignore_punctuation)
    if json_out:
        print_json(cov.to_dict())
    else:
        from ragexam.report.console_data import print_coverage

        print_coverage(cov, console())
    raise typer.Exit(1 if cov.missing else 0)


# --- text metrics ----------------------------------------------------------------------------------------------


@app.command("bleu")
def bleu_cmd(
    refs: Refs, hyps: Hyps,
    tokenize: str = typer.Option("13a", "--tokenize", "-t", help="none, 13a, intl, char, ko-mecab (needs "
                                                                 "ragexam\\[ko]) or ko-kiwi."),
    smooth: str = typer.Option("exp", "--smooth", "-s", help="none, floor, add-k or exp."),
    smooth_value: Optional[float] = typer.Option(None, "--smooth-value", help="For floor (default 0.1) and add-k "
                                                                              "(default 1)."),
    lowercase: Lowercase = False,
    effective_order: bool = typer.Option(False, "--effective-order", help="Use effective n-gram order."),
    json_out: JsonOut = False,
) -> None:
    """Corpus BLEU: `ragexam bleu REFS HYPS` -- the references file first, then the hypotheses (system outputs)
    scored against them, line by line (sacrebleu-identical; score in [0, 1])."""
    from ragexam.api import text_metric_files

    res = text_metric_files(refs, hyps, "bleu", tokenize=tokenize, smooth=smooth, smooth_value=smooth_value,
                            lowercase=lowercase, effective_order=effective_order)
    if json_out:
        return print_json({"score": res.score, "signature": res.signature, "precisions": list(res.precisions),
                            "bp": res.bp, "sys_len": res.sys_len, "ref_len": res.ref_len})
    typer.echo(res.format())


@app.command("chrf")
def chrf_cmd(
    refs: Refs, hyps: Hyps,
    plus: bool = typer.Option(False, "--plus", help="chrF++: add word uni- and bigrams (word order 2)."),
    lowercase: Lowercase = False,
    whitespace: bool = typer.Option(False, "--whitespace", help="Keep whitespace in character n-grams."),
    json_out: JsonOut = False,
) -> None:
    """Corpus chrF (or chrF++ with --plus): `ragexam chrf REFS HYPS` -- the references file first, then the
    hypotheses (system outputs) scored against them, line by line (sacrebleu-identical; [0, 1])."""
    from ragexam.api import text_metric_files

    res = text_metric_files(refs, hyps, "chrf", word_order=2 if plus else 0, lowercase=lowercase,
                            whitespace=whitespace)
    if json_out:
        return print_json({"score": res.score, "signature": res.signature})
    typer.echo(res.format())


# --- retrieval runs --------------------------------------------------------------------------------------------


def _execute_run(settings: dict, *, out, json_out: bool, report, history, no_history: bool, demo: bool = False):
    from ragexam.api import run_exam

    outcome = run_exam(settings, out=out, report=report, history=history, record=not no_history)
    if json_out:
        sys.stdout.write(outcome.result.to_json() + "\n")
        notes(outcome.notes(), True)
    else:
        from ragexam.report.console_run import render_outcome

        render_outcome(outcome, demo=demo)
    failed = outcome.result.summary.failed_pipelines
    if failed:
        for name, why in failed.items():
            sys.stderr.write(f"error: pipeline {name!r} produced nothing: {why}. Fix the pipeline (its service, "
                             "its results file) and run again.\n")
        raise typer.Exit(1)


@app.command("run")
def run_cmd(
    corpus: CorpusOpt = None, qa: QaOpt = None, retriever: Retrievers = None, chunker: Chunkers = None,
    relevance: Relevance = None, k: Cutoffs = None, depth: Depth = None, miss_k: MissK = None, out: RunOut = None,
    json_out: JsonOut = False, seed: BootSeed = None, config: ConfigFile = None,
    ignore_punctuation: IgnorePunct = None, overlap: Overlap = None, n_resamples: Resamples = None,
    n_permutations: Permutations = None, report: ReportOpt = None, history: HistoryOpt = None,
    no_history: NoHistory = False, retrieved: Retrieved = None, header: Headers = None, split: Split = None,
    base_url: BaseUrl = None, api_key: ApiKey = None, price: Price = None, workers: Workers = None,
    executor: ExecutorOpt = None,
) -> None:
    """Grade retrieval pipelines on a question set -- ragexam's retriever x chunker, your results files
    (--retrieved), your search service (-r http:URL), with rerank stages: metrics with 95% intervals, the P/R/F
    sweep, per question type, paired comparisons with the first pipeline, the missed questions."""
    from ragexam.api import pipeline_options, run_settings
    from ragexam.retrieval.spec import split_specs

    settings = run_settings(config, {
        "corpus": corpus, "qa": qa, "retrievers": split_specs(retriever), "chunkers": commas(chunker, "--chunker"),
        "relevance": relevance, "k": k or None, "depth": depth, "miss_k": miss_k, "seed": seed,
        "n_resamples": n_resamples, "n_permutations": n_permutations, "ignore_punctuation": ignore_punctuation,
        "overlap": overlap, "retrieved": retrieved or None, "out": str(out) if out is not None else None,
        "workers": workers, "executor": executor, **pipeline_options(header, split, base_url, api_key, price)})
    out = settings.pop("out", None)
    _execute_run(settings, out=out, json_out=json_out, report=report, history=history, no_history=no_history)


app.command("grade", help="Grade your own pipeline: `ragexam grade --qa QA --retrieved results.jsonl [--retrieved "
            "other.jsonl]` (the corpus is optional). The same options and output as `run`.")(run_cmd)


@app.command("convert")
def convert_cmd(to: ConvertTo, out: ConvertOut, corpus: CorpusOpt = None, qa: QaOpt = None, queries: Queries = None,
                split: Split = None, source_format: Optional[str] = typer.Option(
                    None, "--from", help="The tool that made --qa: ragas, deepeval or autorag (default: recognised "
                                         "by its fields)."),
                no_locate: bool = typer.Option(False, "--no-locate", help="Do not locate the evidence of converted "
                                                                          "questions (grade by document)."),
                json_out: JsonOut = False) -> None:
    """Convert between ragexam JSONL, BEIR folders and TREC qrels (ids with spaces are encoded in TREC files), or a
    RAGAS test set, DeepEval goldens or AutoRAG's qa/corpus parquet files into ragexam's files, evidence located."""
    from ragexam.api import convert

    done = convert(to, out, corpus=corpus, qa=qa, queries=queries, split=split, source_format=source_format,
                   locate=not no_locate)
    print_json(done.to_dict()) if json_out else notes(done.lines(), False)


@app.command("demo")
def demo_cmd(out: RunOut = None, json_out: JsonOut = False, report: ReportOpt = None, history: HistoryOpt = None,
             no_history: NoHistory = False) -> None:
    """Grade bm25, dense, hybrid and a rerank stage on the bundled Korean IT-helpdesk set, fully offline.

    The same as `ragexam run --corpus it_helpdesk --qa it_helpdesk -r bm25 -r dense -r hybrid:bm25+dense
    -r 'bm25>rerank:dense'`.
    """
    from ragexam.api import DEMO_SETTINGS

    if not json_out:
        from ragexam.report.console_run import render_demo_intro
        from ragexam.report.terminal import console

        render_demo_intro(console())
    _execute_run(dict(DEMO_SETTINGS), out=out, json_out=json_out, report=report, history=history,
                 no_history=no_history, demo=True)


# --- report and history ----------------------------------------------------------------------------------------


@app.command("report")
def report_cmd(
    run: str = typer.Argument(..., help="A run folder (from `ragexam run --out DIR`) or a recorded run id."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="HTML file to write (default: RUN/report.html for "
                                       "a folder, report-<id>.html here for a recorded run)."),
    answers: Optional[Path] = typer.Option(None, "--answers", help="Generated answers / judge results for the "
                                           "missed-question details: JSONL rows with query_id (and pipeline, answer, "
                                           "reasoning, verdict, ground_truth), or a JSON object."),
    history: HistoryOpt = None,
    lang: str = typer.Option("en", "--lang", help="Language of the report's texts: en or ko (data, names and the "
                             "verdicts ragexam computes stay as they are)."),
) -> None:
    """Write one self-contained HTML report of a run (opens offline; plots, missed questions, settings)."""
    from ragexam.api import write_run_report

    notes: List[str] = []
    path = write_run_report(run, out, answers=answers, history=history, lang=lang, notes=notes)
    for note in notes:
        sys.stderr.write(f"warning: {note}\n")
    typer.echo(f"wrote {path} ({path.stat().st_size / 1024:.0f} KB)")


@app.command("runs")
def runs_cmd(
    history: HistoryOpt = None,
    limit: Optional[int] = typer.Option(None, "--limit", "-n", min=1, help="Show the newest N only."),
    record: Optional[Path] = typer.Option(None, "--record", help="Record an existing run folder, then list."),
    delete: Optional[str] = typer.Option(None, "--delete", help="Delete the recorded run with this id."),
    json_out: JsonOut = False,
) -> None:
    """List the recorded runs (id, date, dataset, pipelines, headline metric)."""
    from ragexam.api import list_runs

    hist, entries, messages = list_runs(history, limit, record=record, delete=delete)
    for m in messages:
        typer.echo(m, err=json_out)
    if json_out:
        return print_json([e.to_dict() for e in entries])
    from ragexam.report.console import print_runs

    print_runs(entries, path=str(hist.path))


@app.command("show")
def show_cmd(
    run_id: str = typer.Argument(..., help="A recorded run id (a unique prefix or 'latest' works), or a run folder."),
    history: HistoryOpt = None,
    json_out: bool = typer.Option(False, "--json", help="Print the stored summary.json instead."),
) -> None:
    """Print a recorded run again (the tables `ragexam run` printed)."""
    from ragexam.api import show

    data = show(run_id, history)
    if json_out:
        return print_json(data.summary.to_dict() if data.run is not None else data.summary)
    from ragexam.report.console import show_run

    show_run(data.summary, folder=None if data.source.startswith("history:") else data.source)


@app.command("compare")
def compare_cmd(
    run_a: str = typer.Argument(..., help="Run A (the reference): a run folder or a recorded run id."),
    run_b: str = typer.Argument(..., help="Run B (compared against A): a run folder or a recorded run id."),
    pipeline: Optional[str] = typer.Option(None, "--pipeline", "-p", help="Pipeline to compare (default: every "
                                                                         "pipeline in both runs)."),
    pipeline_b: Optional[str] = typer.Option(None, "--pipeline-b", help="Run B's pipeline, when it is named "
                                                                        "differently from A's."),
    metric: Optional[List[str]] = typer.Option(None, "--metric", "-m", help="Metric to compare, repeatable "
                                                                            "(default: all both runs have)."),
    miss_k: Optional[int] = typer.Option(None, "--miss-k", help="Found/missed cutoff for the flipped questions "
                                                                "(default: run A's miss_k)."),
    seed: Optional[int] = typer.Option(None, "--seed", help="Seed of the bootstrap (default: run A's seed)."),
    allow_grading_change: bool = typer.Option(False, "--allow-grading-change", help="Compare runs graded under "
                                              "different relevance rules or question sets; the differences then "
                                              "include the change of grading (refused otherwise)."),
    history: HistoryOpt = None, json_out: JsonOut = False,
) -> None:
    """Per-metric differences B − A on the shared questions (paired bootstrap CI, randomization p, Holm)
    and the questions that flipped between found and missed."""
    from ragexam.api import compare

    res = compare(run_a, run_b, history=history, pipeline=pipeline, pipeline_b=pipeline_b,
                  metrics=commas(metric, "--metric"), miss_k=miss_k, seed=seed, allow_grading_change=allow_grading_change)
    if json_out:
        return print_json(res.to_dict())
    from ragexam.report.console import print_comparison

    print_comparison(res)


@app.command("check")
def check_cmd(
    run: Optional[str] = typer.Argument(None, help="A run or score folder (`ragexam run/score --out`) or a recorded "
                                                   "id."),
    minimum: Optional[List[str]] = typer.Option(None, "--min", help="Floor METRIC=VALUE, repeatable, e.g. --min "
                                                                    "hit@5=0.8."),
    pipeline: Optional[str] = typer.Option(None, "--pipeline", "-p", help="Check this pipeline only (default: all)."),
    segment: Optional[str] = typer.Option(None, "--segment", help="On a score made with --by: check this segment "
                                          "(a model, a day, a tag; 'all': every one) instead of the pipelines."),
    point: bool = typer.Option(False, "--point", help="Compare the mean, not the 95% CI lower bound, with the floor."),
    max_junk: Optional[float] = typer.Option(None, "--max-junk", help="Ceiling of the question set's audited junk "
                                             "rate (its 95% upper bound), e.g. 0.1: the set RUN read, or --qa's; "
                                             "a set nobody audited fails."),
    qa: Optional[Path] = typer.Option(None, "--qa", help="Gate this question set's audited junk rate (with "
                                                         "--max-junk; no RUN needed)."),
    trust_judge: bool = typer.Option(False, "--trust-judge", help="Gate on a judge metric even when its judge was "
                                     "not shown to separate good from bad (by default such a floor fails)."),
    history: HistoryOpt = None,
) -> None:
    """CI gate: exit 1 when a metric's 95% CI lower bound (or with --point its mean) is below its floor, when a
    judge metric's judge was not shown to separate good from bad (see `ragexam score`; --trust-judge gates anyway),
    or when the question set's audited junk rate may be above --max-junk.

    Exit status: 0 all floors met, 1 some floor missed, 2 bad input (e.g. an unknown metric)."""
    from ragexam.api import check, check_junk
    from ragexam.errors import InputError
    from ragexam.report.console import print_gate

    if max_junk is None and (qa is not None or not minimum or run is None):
        raise InputError("expected RUN --min METRIC=VALUE, or --max-junk RATE with RUN or --qa QA (e.g. `ragexam "
                         "check --qa qa.jsonl --max-junk 0.1`)", source="check", field="--min" if run else "RUN")
    if minimum and run is None:
        raise InputError("--min needs a RUN (a run or score folder, or a recorded id)", source="check", field="RUN")
    results: List = check(run, minimum, pipeline=pipeline, point=point, history=history,
                          segment=segment, trust_judge=trust_judge) if minimum else []
    if max_junk is not None:
        results.append(check_junk(max_junk, qa=qa, run=None if qa is not None else run, history=history))
    print_gate(results)
    if not all(r.passed for r in results):
        raise typer.Exit(code=1)


# the answer and generation commands register themselves on the same application
from ragexam import cli_answers, cli_generate, cli_questions, cli_serve, cli_traces  # noqa: E402,F401


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """ragexam's own warnings on the command line: ``warning: …`` (keys scrubbed), not Python's
    ``file:line: Category:`` form; other warnings as Python shows them."""
    if category.__module__.startswith("ragexam"):
        from ragexam.llm.redact import scrub

        sys.stderr.write(f"warning: {scrub(str(message))}\n")
    else:
        _python_warning(message, category, filename, lineno, file, line)


def main(argv: Optional[List[str]] = None) -> None:
    """Console-script entry point."""
    import warnings

    from ragexam.errors import RagexamError, speaking_to

    global _python_warning
    if warnings.showwarning is not _show_warning:
        _python_warning, warnings.showwarning = warnings.showwarning, _show_warning
    from ragexam.cli_progress import long_command  # progress lines in logs; one line when interrupted

    try:
        with speaking_to("cli"), long_command(list(argv) if argv is not None else sys.argv[1:]):
            app(args=argv, prog_name="ragexam")
    except RagexamError as err:
        from rich.console import Console
        from rich.text import Text

        from ragexam.llm.redact import scrub  # every configured key and header value, whatever the message quotes

        Console(stderr=True, soft_wrap=True).print(Text.assemble(("error: ", "bold red"), scrub(str(err)) or ""),
                                                   highlight=False)
        sys.exit(2)


_python_warning = None


if __name__ == "__main__":  # pragma: no cover
    main()
