"""The answer commands of the ``ragexam`` command line: ``score``, ``answer``, ``pairwise``, ``judge-agreement``.

Registered on the one application of :mod:`ragexam.cli_options`; like every command, each parses its options,
calls one :mod:`ragexam.api` function and renders what it returns.
"""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from ragexam.cli_options import (ApiKey, app, BaseUrl, CacheDir, commas, Concurrency, console, DryRun, HistoryOpt,
                                 JsonOut, CallsExecutorOpt, JUDGE_METRICS, JudgeLang, llm_settings, LlmSeed,
                                 MaxAttempts, MaxRetries, MaxTokens, NoCache, NoHistory, notes, Price, progress,
                                 ResponseFormat, RetryUnjudged, show, Temperature, Timeout)


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
    retry_unjudged: RetryUnjudged = False,
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
    executor: CallsExecutorOpt = None,
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
                rubrics=rubric or (), executor=executor)
    from ragexam.report.console_score import print_score

    show(json_out, lambda: res.report.to_dict(), lambda c: print_score(res.report, c, list_n=list_n), plan=res.plan)
    if res.plan is not None:
        return
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
    executor: CallsExecutorOpt = None,
) -> None:
    """Generate answers from each pipeline's top chunks with an OpenAI-compatible chat model."""
    from ragexam.api import answer
    from ragexam.report.console_score import print_answer_outcome

    settings = llm_settings(model, base_url, api_key, concurrency=concurrency, temperature=temperature,
                    max_tokens=max_tokens, seed=seed, timeout=timeout, max_retries=max_retries, cache_dir=cache_dir,
                    no_cache=no_cache, price=price)
    res = answer(run, settings, out, qa=qa, corpus=corpus, pipelines=pipeline, contexts=contexts, template=template,
                 lang=lang, dry_run=dry_run, progress=progress("answering"), executor=executor)
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
    retry_unjudged: RetryUnjudged = False,
    price: Price = None, dry_run: DryRun = False,
    out: Optional[Path] = typer.Option(None, "--out", help="Write the pairs and the summary as JSON to FILE."),
    json_out: JsonOut = False,
    list_n: int = typer.Option(10, "--list", help="List up to N inconsistent pairs (0: none)."),
) -> None:
    """Judge two pipelines' answers to the same questions side by side, in both orders: a verdict counts only
    when both orders agree (docs/judge.md)."""
    from ragexam.api import pairwise
    from ragexam.report.console_judge import print_pairwise

    settings = llm_settings(judge_model, base_url, api_key, concurrency=concurrency, temperature=temperature,
                            max_tokens=max_tokens, seed=seed, timeout=timeout, max_retries=max_retries,
                            cache_dir=cache_dir, no_cache=no_cache, price=price, response_format=response_format)
    res = pairwise(qa, answers, settings, a=a, b=b, repeat=repeat, max_attempts=max_attempts, judge_lang=judge_lang,
                   retry_unjudged=retry_unjudged, dry_run=dry_run, out=out,
                   progress=progress("judging") if not json_out else None)
    show(json_out, res.to_dict, lambda c: print_pairwise(res.to_dict(), c, list_n=list_n),
         plan=res if dry_run else None)


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
    from ragexam.report.console_score import print_agreement

    def data() -> dict:
        jr = res.judge_run
        return {"judge": {"model": jr.model, "endpoint": jr.endpoint, "signatures": jr.signatures,
                          "usage": jr.usage}, "metrics": {m: a.to_dict() for m, a in res.results.items()}}

    show(json_out, data, lambda c: print_agreement(res, c), plan=res.plan)
