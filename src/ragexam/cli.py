"""The ``ragexam`` command line: options in, one :mod:`ragexam.api` call, rendering out.

Shared option groups are declared once in :mod:`ragexam.cli_options`; commands import their work lazily, so
``ragexam --help`` stays fast.  :class:`ragexam.errors.RagexamError` is printed as one message on stderr with
exit status 2; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import List, Optional

import typer

from ragexam.cli_options import (ApiKey, BaseUrl, BootSeed, CacheDir, Chunkers, commas, Concurrency, ConfigFile,
                                 console, ConvertOut, ConvertTo, CorpusOpt, Cutoffs, Depth, DryRun, Group, Headers,
                                 HistoryOpt, Hyps, IgnorePunct, JsonOut, JUDGE_METRICS, JudgeLang, llm_settings,
                                 LlmSeed, Lowercase, MaxAttempts, MaxRetries, MaxTokens, MissK, NoCache, NoHistory,
                                 notes, Overlap, Permutations, Price, print_json, progress, QaOpt, Queries, Refs,
                                 Relevance, ReportOpt, Resamples, ResponseFormat, Retrieved, Retrievers, RunOut,
                                 Split, Temperature, Timeout)

app = typer.Typer(name="ragexam", help="Grade retrieval-augmented generation pipelines like a mock exam.",
                  no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False, cls=Group)


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
    metric: Optional[List[str]] = typer.Option(None, "--metric", "-m", help="Metric name, repeatable: hit@K mrr "
                                               "mrr@K ndcg ndcg@K p@K r@K f1@K fB@K rprec map map@K (trec_eval names "
                                               "work too). Results are keyed by the names as given. Default: a "
                                               "standard set."),
    json_out: JsonOut = False,
    trec_compat: bool = typer.Option(False, "--trec-compat", help="Reproduce trec_eval: drop qrels queries absent "
                                     "from the run and score queries without relevant judgments as 0."),
    relevance_level: int = typer.Option(1, "--relevance-level", "-l", help="Minimum grade that counts as relevant "
                                        "for binary metrics (trec_eval -l)."),
) -> None:
    """Evaluate a TREC run against TREC qrels (numbers identical to trec_eval)."""
    from ragexam.api import evaluate_trec

    res = evaluate_trec(qrels, run, metric, relevance_level=relevance_level, trec_compat=trec_compat)
    for warning in getattr(res, "warnings", ()):
        sys.stderr.write(f"warning: {warning}\n")
    if json_out:
        print_json(res.to_dict())
    else:
        from ragexam.report.console_data import print_ranking_result

        print_ranking_result(res, f"{run} vs {qrels}", console())


@app.command("validate")
def validate_cmd(
    corpus: str = typer.Option(..., "--corpus", help="Corpus file (JSONL, or .csv) or a bundled dataset name."),
    qa: Optional[str] = typer.Option(None, "--qa", help="QA file (JSONL) or a bundled dataset name."),
    ignore_punctuation: bool = typer.Option(False, "--ignore-punctuation", help="Ignore punctuation when matching "
                                                                                "evidence strings."),
    json_out: JsonOut = False,
) -> None:
    """Check a corpus and a QA set; print every problem and a count by kind.

    Exits 1 if any error-level problem was found, 0 otherwise (warnings allowed).
    """
    from ragexam.data.validation import validate

    report = validate(corpus, qa, ignore_punctuation=ignore_punctuation)
    if json_out:
        print_json(report.to_dict())
    else:
        from ragexam.report.console_data import print_validation

        print_validation(report, console(), with_questions=qa is not None)
    raise typer.Exit(0 if report.ok else 1)


@app.command("datasets")
def datasets_cmd(json_out: JsonOut = False) -> None:
    """List the bundled question sets (usable as --corpus NAME --qa NAME) with their sizes."""
    from ragexam.data.catalog import list_datasets

    infos = list_datasets()
    if json_out:
        return print_json([i.to_dict() for i in infos])
    from ragexam.report.console_data import print_datasets

    print_datasets(infos, console())


@app.command("evidence-coverage")
def evidence_coverage_cmd(
    corpus: str = typer.Option(..., "--corpus", help="Corpus file or bundled dataset name."),
    qa: str = typer.Option(..., "--qa", help="QA file or bundled dataset name."),
    chunker: str = typer.Option("whole", "--chunker", help="Chunker spec, e.g. chars:400:80, sentences:300."),
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
    """Corpus BLEU of HYPS against REFS (sacrebleu-identical; score in [0, 1])."""
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
    """Corpus chrF (or chrF++ with --plus) of HYPS against REFS (sacrebleu-identical; [0, 1])."""
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
        return notes(outcome.notes(), True)
    from ragexam.report.console_run import render_outcome

    render_outcome(outcome, demo=demo)


@app.command("run")
def run_cmd(
    corpus: CorpusOpt = None, qa: QaOpt = None, retriever: Retrievers = None, chunker: Chunkers = None,
    relevance: Relevance = None, k: Cutoffs = None, depth: Depth = None, miss_k: MissK = None, out: RunOut = None,
    json_out: JsonOut = False, seed: BootSeed = None, config: ConfigFile = None,
    ignore_punctuation: IgnorePunct = None, overlap: Overlap = None, n_resamples: Resamples = None,
    n_permutations: Permutations = None, report: ReportOpt = None, history: HistoryOpt = None,
    no_history: NoHistory = False, retrieved: Retrieved = None, header: Headers = None, split: Split = None,
    base_url: BaseUrl = None, api_key: ApiKey = None, price: Price = None,
) -> None:
    """Grade retrieval pipelines on a question set -- ragexam's retriever x chunker, your results files
    (--retrieved), your search service (-r http:URL), with rerank stages: metrics with 95% intervals, the P/R/F
    sweep, per question type, paired comparisons with the first pipeline, the missed questions."""
    from ragexam.analysis.run_config import load_config_file, merge_settings
    from ragexam.api import pipeline_options

    settings = merge_settings(load_config_file(config) if config is not None else {}, {
        "corpus": corpus, "qa": qa, "retrievers": retriever or None, "chunkers": commas(chunker),
        "relevance": relevance, "k": k or None, "depth": depth, "miss_k": miss_k, "seed": seed,
        "n_resamples": n_resamples, "n_permutations": n_permutations, "ignore_punctuation": ignore_punctuation,
        "overlap": overlap, "retrieved": retrieved or None, "out": str(out) if out is not None else None,
        **pipeline_options(header, split, base_url, api_key, price)})
    out = settings.pop("out", None)
    _execute_run(settings, out=out, json_out=json_out, report=report, history=history, no_history=no_history)


app.command("grade", help="Grade your own pipeline: `ragexam grade --qa QA --retrieved results.jsonl [--retrieved "
            "other.jsonl]` (the corpus is optional). The same options and output as `run`.")(run_cmd)


@app.command("convert")
def convert_cmd(to: ConvertTo, out: ConvertOut, corpus: CorpusOpt = None, qa: QaOpt = None, queries: Queries = None,
                split: Split = None, json_out: JsonOut = False) -> None:
    """Convert between ragexam JSONL, BEIR folders and TREC qrels (ids with spaces are encoded in TREC files)."""
    from ragexam.data.convert import convert

    done = convert(to, out, corpus=corpus, qa=qa, queries=queries, split=split)
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
        from ragexam.report.console_run import render_demo_intro, run_console

        render_demo_intro(run_console())
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
) -> None:
    """Write one self-contained HTML report of a run (opens offline; plots, missed questions, settings)."""
    from ragexam.api import write_run_report

    path = write_run_report(run, out, answers=answers, history=history)
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
    from ragexam.storage.history import resolve_run

    data = resolve_run(run_id, history)
    if json_out:
        return print_json(data.summary)
    from ragexam.report.console import show_run

    show_run(data.summary)


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
    history: HistoryOpt = None, json_out: JsonOut = False,
) -> None:
    """Per-metric differences B − A on the shared questions (paired bootstrap CI, randomization p, Holm)
    and the questions that flipped between found and missed."""
    from ragexam.api import compare

    res = compare(run_a, run_b, history=history, pipeline=pipeline, pipeline_b=pipeline_b,
                  metrics=commas(metric), miss_k=miss_k, seed=seed)
    if json_out:
        return print_json(res.to_dict())
    from ragexam.report.console import print_comparison

    print_comparison(res)


@app.command("check")
def check_cmd(
    run: str = typer.Argument(..., help="A run or score folder (`ragexam run/score --out`) or a recorded id."),
    minimum: List[str] = typer.Option(..., "--min", help="Floor METRIC=VALUE, repeatable, e.g. --min hit@5=0.8."),
    pipeline: Optional[str] = typer.Option(None, "--pipeline", "-p", help="Check this pipeline only (default: all)."),
    point: bool = typer.Option(False, "--point", help="Compare the mean, not the 95% CI lower bound, with the floor."),
    history: HistoryOpt = None,
) -> None:
    """CI gate: exit 1 when a metric's 95% CI lower bound (or with --point its mean) is below its floor.

    Exit status: 0 all floors met, 1 some floor missed, 2 bad input (e.g. an unknown metric)."""
    from ragexam.api import check
    from ragexam.report.console import print_gate

    results = check(run, minimum, pipeline=pipeline, point=point, history=history)
    print_gate(results)
    if not all(r.passed for r in results):
        raise typer.Exit(code=1)


# --- answers ---------------------------------------------------------------------------------------------------


@app.command("score")
def score_cmd(
    qa: str = typer.Option(..., "--qa", help="Question set (JSONL) or a bundled name (it_helpdesk)."),
    answers: str = typer.Option(..., "--answers", help="Answers JSONL (query_id, answer, optional contexts, "
                                                       "pipeline), or a bundled name (it_helpdesk)."),
    run: Optional[Path] = typer.Option(None, "--run", help="Folder of `ragexam run --out DIR`: retrieval ranks "
                                                           "(first_rank) for stage attribution."),
    pipeline: Optional[str] = typer.Option(None, "--pipeline", help="Pipeline of the run that answers without a "
                                           "'pipeline' field belong to (default: the run's only pipeline)."),
    corpus: Optional[str] = typer.Option(None, "--corpus", help="Corpus of the run (default: the one in its "
                                         "summary.json); only for a ragexam-run/1 folder, to rebuild its chunk texts."),
    miss_k: Optional[int] = typer.Option(None, "--miss-k", help="Evidence counts as retrieved when first_rank <= K "
                                         "(default: the answers' k, else the run's miss_k, else 5)."),
    correct_if: Optional[str] = typer.Option(None, "--correct-if", help="Without a judge: an answer is correct when "
                                             "e.g. chrf>=0.5 (chrf, bleu, rouge_l; join with ',')."),
    abstain_phrases: Optional[Path] = typer.Option(None, "--abstain-phrases", help="File of phrases (one per line) "
                                                   "that mark an abstention (default: a built-in Korean+English list)."),
    bleu_tokenize: str = typer.Option("auto", "--bleu-tokenize", help="auto (ko-kiwi for Korean, else 13a), none, "
                                                                      "13a, intl, char, ko-mecab, ko-kiwi."),
    judge_model: Optional[str] = typer.Option(None, "--judge-model", help="Judge model on an OpenAI-compatible "
                                                                          "endpoint (e.g. gpt-4o-mini)."),
    base_url: BaseUrl = None, api_key: ApiKey = None,
    metric: Optional[List[str]] = typer.Option(None, "--metric", "-m", help=f"Judge metric, repeatable: "
                                                                            f"{JUDGE_METRICS} (default: "
                                                                            "context_relevance, faithfulness, "
                                                                            "answer_correctness, abstention and every "
                                                                            "--rubric)."),
    rubric: Optional[List[Path]] = typer.Option(None, "--rubric", help="A custom rubric file (.json/.yaml, "
                                                "docs/judge.md): a judged metric named in the file; repeatable."),
    repeat: int = typer.Option(1, "--repeat", help="Judge every item N times: the canonical verdict is the majority "
                                                   "(ties to the worse), with the flip share and agreement."),
    concurrency: Concurrency = 4, temperature: Temperature = 0.0, max_tokens: MaxTokens = None,
    seed: LlmSeed = None, timeout: Timeout = 60.0, max_attempts: MaxAttempts = 3, max_retries: MaxRetries = 4,
    response_format: ResponseFormat = "auto", judge_lang: JudgeLang = "auto", cache_dir: CacheDir = None,
    no_cache: NoCache = False,
    retry_unjudged: bool = typer.Option(False, "--retry-unjudged", help="Re-judge cached unjudged results."),
    price: Price = None, dry_run: DryRun = False,
    out: Optional[Path] = typer.Option(None, "--out", help="Write score.json, per_answer.csv, judgments.jsonl here."),
    json_out: JsonOut = False,
    list_n: int = typer.Option(30, "--list", help="List up to N questions that are not ok (0: none)."),
    report: Optional[Path] = typer.Option(None, "--report", help="Write the HTML report of the --run folder with "
                                          "these answers, verdicts, judge reasoning and stage attribution to FILE.html."),
    history: HistoryOpt = None, no_history: NoHistory = False,
    min_coverage: Optional[float] = typer.Option(None, "--min-coverage", help="Exit 1 when a judge metric judged "
                                                 "less than this fraction (0-1) of its items. Without it, exit 1 only "
                                                 "when nothing at all was judged."),
) -> None:
    """Score generated answers: BLEU/chrF/ROUGE-L vs ground_truth, LLM-judge metrics with coverage, and which
    stage failed per question (retrieval_miss, generation_miss, lucky, hallucinated, ...)."""
    from ragexam.api import score

    judge = llm_settings(judge_model, base_url, api_key, concurrency=concurrency, temperature=temperature,
                 max_tokens=max_tokens, seed=seed, timeout=timeout, max_retries=max_retries, cache_dir=cache_dir,
                 no_cache=no_cache, price=price, response_format=response_format) if judge_model else None
    res = score(qa, answers, run=run, pipeline=pipeline, corpus=corpus, miss_k=miss_k, correct_if=correct_if,
                abstain_phrases=abstain_phrases, bleu_tokenize=bleu_tokenize, judge=judge, metrics=commas(metric),
                repeat=repeat, max_attempts=max_attempts, judge_lang=judge_lang, retry_unjudged=retry_unjudged,
                min_coverage=min_coverage, dry_run=dry_run, out=out, report=report, history=history,
                record=not no_history, progress=progress("judging") if not json_out else None,
                rubrics=rubric or ())
    from ragexam.report.console_score import print_plan, print_score

    if res.plan is not None:
        return print_json(res.plan.to_dict()) if json_out else print_plan(res.plan, console())
    if json_out:
        print_json(res.report.to_dict())
    else:
        print_score(res.report, console(), list_n=list_n)
    notes(res.lines, json_out)
    notes([f"coverage: {f}" for f in res.failures], json_out)
    if res.failures:
        raise typer.Exit(1)


@app.command("answer")
def answer_cmd(
    run: Path = typer.Option(..., "--run", help="Folder of `ragexam run --out DIR` (its top_ids are the contexts)."),
    model: str = typer.Option(..., "--model", help="Generator model on an OpenAI-compatible endpoint."),
    out: Optional[Path] = typer.Option(None, "--out", help="Answers JSONL to write (query_id, pipeline, answer, "
                                                           "contexts); required unless --dry-run."),
    qa: Optional[str] = typer.Option(None, "--qa", help="Question set (default: the run's)."),
    corpus: Optional[str] = typer.Option(None, "--corpus", help="Corpus (default: the run's); only for a "
                                         "ragexam-run/1 folder, which does not store its chunk texts: re-chunked "
                                         "with each pipeline's chunker."),
    pipeline: Optional[List[str]] = typer.Option(None, "--pipeline", help="Pipeline(s) to answer for (default: all)."),
    contexts: int = typer.Option(5, "--contexts", help="Top chunks given to the generator (1-10)."),
    template: Optional[Path] = typer.Option(None, "--template", help="Prompt template file with {question} and "
                                                                     "{contexts} (default: a built-in one)."),
    base_url: BaseUrl = None, api_key: ApiKey = None, concurrency: Concurrency = 4, temperature: Temperature = 0.0,
    max_tokens: MaxTokens = None, seed: LlmSeed = None, timeout: Timeout = 60.0, max_retries: MaxRetries = 4,
    lang: str = typer.Option("auto", "--lang", help="Default template language: auto, ko, en."),
    cache_dir: CacheDir = None, no_cache: NoCache = False, price: Price = None, dry_run: DryRun = False,
) -> None:
    """Generate answers from each pipeline's top chunks with an OpenAI-compatible chat model."""
    from ragexam.api import answer
    from ragexam.report.console_score import print_answer_outcome

    settings = llm_settings(model, base_url, api_key, concurrency=concurrency, temperature=temperature,
                    max_tokens=max_tokens, seed=seed, timeout=timeout, max_retries=max_retries, cache_dir=cache_dir,
                    no_cache=no_cache, price=price)
    res = answer(run, settings, out, qa=qa, corpus=corpus, pipelines=pipeline, contexts=contexts, template=template,
                 lang=lang, dry_run=dry_run, progress=progress("answering"))
    print_answer_outcome(res, console())
    if res.failed:
        raise typer.Exit(1)


@app.command("pairwise")
def pairwise_cmd(
    qa: str = typer.Option(..., "--qa", help="Question set (JSONL) or a bundled name."),
    answers: str = typer.Option(..., "--answers", help="Answers JSONL with a 'pipeline' field holding both pipelines."),
    a: str = typer.Option(..., "--a", help="Pipeline A (the baseline)."),
    b: str = typer.Option(..., "--b", help="Pipeline B (the candidate)."),
    judge_model: str = typer.Option(..., "--judge-model", help="Judge model on an OpenAI-compatible endpoint."),
    base_url: BaseUrl = None, api_key: ApiKey = None,
    repeat: int = typer.Option(1, "--repeat", help="Ask each order N times (each order's winner: the majority)."),
    concurrency: Concurrency = 4, temperature: Temperature = 0.0, max_tokens: MaxTokens = None,
    seed: LlmSeed = None, timeout: Timeout = 60.0, max_attempts: MaxAttempts = 3, max_retries: MaxRetries = 4,
    response_format: ResponseFormat = "auto", judge_lang: JudgeLang = "auto", cache_dir: CacheDir = None,
    no_cache: NoCache = False,
    retry_unjudged: bool = typer.Option(False, "--retry-unjudged", help="Re-judge cached unjudged results."),
    price: Price = None, dry_run: DryRun = False,
    out: Optional[Path] = typer.Option(None, "--out", help="Write the pairs and the summary as JSON to FILE."),
    json_out: JsonOut = False,
    list_n: int = typer.Option(10, "--list", help="List up to N inconsistent pairs (0: none)."),
) -> None:
    """Judge two pipelines' answers to the same questions side by side, in both orders: a verdict counts only
    when both orders agree (docs/judge.md)."""
    from ragexam.api import pairwise
    from ragexam.report.console_judge import print_pairwise
    from ragexam.report.console_score import print_plan

    settings = llm_settings(judge_model, base_url, api_key, concurrency=concurrency, temperature=temperature,
                            max_tokens=max_tokens, seed=seed, timeout=timeout, max_retries=max_retries,
                            cache_dir=cache_dir, no_cache=no_cache, price=price, response_format=response_format)
    res = pairwise(qa, answers, settings, a=a, b=b, repeat=repeat, max_attempts=max_attempts, judge_lang=judge_lang,
                   retry_unjudged=retry_unjudged, dry_run=dry_run, out=out,
                   progress=progress("judging") if not json_out else None)
    if dry_run:
        return print_json(res.to_dict()) if json_out else print_plan(res, console())
    if json_out:
        print_json(res.to_dict())
    else:
        print_pairwise(res.to_dict(), console(), list_n=list_n)


@app.command("judge-agreement")
def judge_agreement_cmd(
    qa: str = typer.Option(..., "--qa", help="Question set whose questions carry 'human' labels, e.g. "
                                             "\"human\": {\"answer_correctness\": 4}."),
    answers: str = typer.Option(..., "--answers", help="The answers the humans labelled (a 'human' object on an "
                                                       "answer line overrides the question's)."),
    judge_model: str = typer.Option(..., "--judge-model", help="Judge model."),
    metric: Optional[List[str]] = typer.Option(None, "--metric", "-m", help=f"Metric(s) to compare: {JUDGE_METRICS} "
                                                                            "(default: those with human labels)."),
    weights: str = typer.Option("quadratic", "--weights", help="Weighted kappa for the 1-5 scales: none, linear, "
                                                               "quadratic."),
    top: int = typer.Option(10, "--top", help="Largest disagreements to list."),
    run: Optional[Path] = typer.Option(None, "--run", help="Run folder (contexts for context_relevance/faithfulness)."),
    pipeline: Optional[str] = typer.Option(None, "--pipeline", help="Pipeline of the run the answers belong to."),
    corpus: Optional[str] = typer.Option(None, "--corpus", help="Corpus of the run."),
    base_url: BaseUrl = None, api_key: ApiKey = None, concurrency: Concurrency = 4, temperature: Temperature = 0.0,
    max_tokens: MaxTokens = None, seed: LlmSeed = None, timeout: Timeout = 60.0, max_attempts: MaxAttempts = 3,
    max_retries: MaxRetries = 4, response_format: ResponseFormat = "auto", judge_lang: JudgeLang = "auto",
    cache_dir: CacheDir = None, no_cache: NoCache = False, dry_run: DryRun = False,
    json_out: JsonOut = False,
) -> None:
    """Compare LLM-judge scores with human labels: Cohen's kappa (weighted), Spearman, and the largest
    disagreements to read."""
    from ragexam.api import judge_agreement

    settings = llm_settings(judge_model, base_url, api_key, concurrency=concurrency, temperature=temperature,
                    max_tokens=max_tokens, seed=seed, timeout=timeout, max_retries=max_retries, cache_dir=cache_dir,
                    no_cache=no_cache, price=None, response_format=response_format)
    res = judge_agreement(qa, answers, settings, metrics=commas(metric), weights=weights, top=top, run=run,
                          pipeline=pipeline, corpus=corpus, max_attempts=max_attempts, judge_lang=judge_lang,
                          dry_run=dry_run, progress=progress("judging") if not json_out else None)
    from ragexam.report.console_score import print_agreement, print_plan

    if res.plan is not None:
        return print_json(res.plan.to_dict()) if json_out else print_plan(res.plan, console())
    if json_out:
        jr = res.judge_run
        return print_json({"judge": {"model": jr.model, "endpoint": jr.endpoint, "signatures": jr.signatures,
                                      "usage": jr.usage}, "metrics": {m: a.to_dict() for m, a in res.results.items()}})
    print_agreement(res, console())


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
