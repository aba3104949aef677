"""The answer and judge commands of the ``ragexam`` command line: ``score``, ``answer``, ``pairwise``,
``judge-agreement``, ``judge-check`` and ``llm probe``.

Registered on the one application of :mod:`ragexam.cli_options`; like every command, each parses its options,
calls one :mod:`ragexam.api` function and renders what it returns.  Every command that calls a model takes the
one LLM option group (:func:`ragexam.cli_options.llm_options`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, List, Optional

import typer

from ragexam.cli_options import (app, CallsExecutorOpt, commas, console, DryRun, HistoryOpt, JsonOut, late_help,
                                 LLMOptions, llm_options, NoHistory, notes, progress, show)

if TYPE_CHECKING:
    from ragexam.api import ScoreOutcome

#: score's judge-check (issue 37 item 4: the verdict beside every judged metric)
NoJudgeCheck = Annotated[bool, typer.Option("--no-judge-check", help="Do not run judge-check when none of this judge "
                                            "on this question set is recorded: the judged metrics then read 'not "
                                            "checked' and `ragexam check` does not gate on them.")]
JudgeCheckSample = Annotated[Optional[int], typer.Option("--judge-check-sample", help="Questions of that judge-check "
                                                         "(a seeded sample; default 20, at least 10).")]


# --- the judge metrics' help, from the registry (filled in when the command runs: cli_options.late_help) --------
def score_metric_help() -> str:
    from ragexam.metrics.judge.registry import metric_help

    return f"Judge metric, repeatable: {metric_help(default_for='score')}."


def agreement_metric_help() -> str:
    from ragexam.metrics.judge.registry import metric_help

    return f"Metric(s) to compare: {metric_help()} (default: those with human labels)."


def check_metric_help() -> str:
    from ragexam.analysis.judging.check import contrast_kind
    from ragexam.metrics.judge.registry import metric_help

    return f"Metric(s) to check: {metric_help(default_for='check', able=lambda m: bool(contrast_kind(m)))}."


def human_qa_help() -> str:
    from ragexam.metrics.judge.registry import label_example

    return f"Question set whose questions carry 'human' labels, e.g. \"human\": {label_example()}."


# --- answers ---------------------------------------------------------------------------------------------------


@app.command("score")
@llm_options(required=False, model_help="Judge model on an OpenAI-compatible endpoint (e.g. gpt-4o-mini); without "
                                        "it, text metrics only.")
def score_cmd(
    llm: LLMOptions,
    qa: Optional[str] = typer.Option(None, "--qa", help="Question set (JSONL) or a bundled name (it_helpdesk); "
                                     "optional when every answer carries its 'question' (`ragexam traces import`): "
                                     "then traced questions that are exam questions are matched to it."),
    answers: str = typer.Option(..., "--answers", help="Answers JSONL (query_id, answer, optional contexts, "
                                                       "pipeline, question, trace), or a bundled name (it_helpdesk)."),
    by: Optional[str] = typer.Option(None, "--by", help="Segment the answers by a trace field: model, day (UTC), "
                                     "tag (an answer in every tag it has), feedback, pipeline, any other field of "
                                     "'trace' or key of the answer line; each segment with intervals, compared with "
                                     "the baseline, latency and token percentiles."),
    baseline: Optional[str] = typer.Option(None, "--baseline", help="The segment of --by the others are compared "
                                           "with (default: the first: the earliest day, else the largest)."),
    match_threshold: Optional[float] = typer.Option(None, "--match-threshold", help="e5 cosine at which a traced "
                                                    "question is a near duplicate of an exam question (with the same "
                                                    "numbers; default 0.92, measured: docs/measurements/traces.md)."),
    run: Optional[Path] = typer.Option(None, "--run", help="Folder of `ragexam run --out DIR`: retrieval ranks "
                                                           "(first_rank) for stage attribution."),
    pipeline: Optional[str] = typer.Option(None, "--pipeline", help="Pipeline of the run that answers without a "
                                           "'pipeline' field belong to (default: the run's only pipeline)."),
    corpus: Optional[str] = typer.Option(None, "--corpus", help="Corpus of the run (default: the one in its "
                                         "summary.json): the judge-check's contrast set is built from it, and a "
                                         "ragexam-run/1 folder's chunk texts are rebuilt from it."),
    miss_k: Optional[int] = typer.Option(None, "--miss-k", help="Evidence counts as retrieved when first_rank <= K "
                                         "(default: the answers' k, else the run's miss_k, else 5)."),
    correct_if: Optional[str] = typer.Option(None, "--correct-if", help="Without a judge: an answer is correct when "
                                             "e.g. chrf>=0.5 (chrf, bleu, rouge_l; join with ',')."),
    abstain_phrases: Optional[Path] = typer.Option(None, "--abstain-phrases", help="File of phrases (one per line) "
                                                   "that mark an abstention (default: a built-in Korean+English list)."),
    bleu_tokenize: str = typer.Option("auto", "--bleu-tokenize", help="auto (ko-kiwi for Korean, else 13a), none, "
                                                                      "13a, intl, char, ko-mecab, ko-kiwi."),
    metric: Optional[List[str]] = typer.Option(None, "--metric", "-m", help=late_help(
        "score", "metric", "ragexam.cli_answers:score_metric_help")),
    rubric: Optional[List[Path]] = typer.Option(None, "--rubric", help="A custom rubric file (.json/.yaml, "
                                                "docs/judge.md): a judged metric named in the file; repeatable."),
    repeat: int = typer.Option(1, "--repeat", help="Judge every item N times: the canonical verdict is the majority "
                                                   "(ties to the worse), with the flip share and agreement."),
    human: Optional[Path] = typer.Option(None, "--human", help="Human labels (JSONL: query_id, pipeline?, human: "
                                         "{metric: label}, as judge-agreement reads): each judged metric also gets "
                                         "its mean corrected by them (prediction-powered inference) with its "
                                         "interval."),
    dry_run: DryRun = False,
    out: Optional[Path] = typer.Option(None, "--out", help="Write score.json, per_answer.csv, judgments.jsonl here."),
    json_out: JsonOut = False,
    list_n: int = typer.Option(30, "--list", min=0, help="List up to N questions that are not ok, or (traced answers) "
                                                  "answers to read first (0: none)."),
    report: Optional[Path] = typer.Option(None, "--report", help="Write the HTML report of the --run folder with "
                                          "these answers, verdicts, judge reasoning and stage attribution to "
                                          "FILE.html; without --run (with --by, or traced answers): the page of the "
                                          "score's segments."),
    history: HistoryOpt = None, no_history: NoHistory = False,
    min_coverage: Optional[float] = typer.Option(None, "--min-coverage", help="Exit 1 when a judge metric judged "
                                                 "less than this fraction (0-1) of a pipeline's judgeable answers (not "
                                                 "one that declines). Without it, exit 1 when it judged none of them."),
    executor: CallsExecutorOpt = None,
    no_judge_check: NoJudgeCheck = False, judge_check_sample: JudgeCheckSample = None,
) -> None:
    """Score generated answers: BLEU/chrF/ROUGE-L vs ground_truth, LLM-judge metrics with coverage and how far
    the judge was shown to separate good from bad (a judge-check on a sample, run once per judge and question
    set), and which stage failed per question (retrieval_miss, generation_miss, lucky, hallucinated, ...).
    Production traces (`ragexam traces import`) are graded as they are, without --qa: the reference-free judge
    metrics, segmented with --by (docs/traces.md)."""
    from ragexam.api import score

    res = score(qa, answers, run=run, pipeline=pipeline, corpus=corpus, miss_k=miss_k, correct_if=correct_if,
                abstain_phrases=abstain_phrases, bleu_tokenize=bleu_tokenize, judge=llm.settings(),
                metrics=commas(metric, "--metric"), repeat=repeat, min_coverage=min_coverage, dry_run=dry_run, out=out,
                report=report, history=history, record=not no_history,
                progress=progress("judging", tty=not json_out), rubrics=rubric or (), executor=executor,
                human=human, by=by, baseline=baseline, match_threshold=match_threshold,
                judge_check=not no_judge_check, judge_check_sample=judge_check_sample, **llm.judge())
    from ragexam.report.console_score import print_score

    if res.plan is not None:
        return _show_plan(res, json_out)
    show(json_out, lambda: res.report.to_dict(), lambda c: print_score(res.report, c, list_n=list_n, out=out))
    notes(res.lines, json_out)
    notes([f"coverage: {f}" for f in res.failures], json_out)
    if res.failures:
        raise typer.Exit(1)


def _show_plan(res: "ScoreOutcome", json_out: bool) -> None:
    """``score --dry-run``: the judge's calls and the judge-check's (``--json``: the plan with ``judge_check``)."""
    from ragexam.report.console_score import print_score_plan

    plan, check = res.plan, res.check_plan
    show(json_out, lambda: dict(plan.to_dict(), judge_check=check.to_dict() if check else
                                {"calls": 0, "why": res.check_note}),
         lambda c: print_score_plan(plan, check, res.check_note, c))


@app.command("answer")
@llm_options(model="--model", model_help="Generator model on an OpenAI-compatible endpoint.", judge=False)
def answer_cmd(
    llm: LLMOptions,
    run: Path = typer.Option(..., "--run", help="Folder of `ragexam run --out DIR` (its top_ids are the contexts)."),
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
    lang: str = typer.Option("auto", "--lang", help="Default template language: auto, ko, en."),
    dry_run: DryRun = False,
    executor: CallsExecutorOpt = None,
) -> None:
    """Generate answers from each pipeline's top chunks with an OpenAI-compatible chat model."""
    from ragexam.api import answer
    from ragexam.report.console_score import print_answer_outcome

    res = answer(run, llm.settings(), out, qa=qa, corpus=corpus, pipelines=pipeline, contexts=contexts,
                 template=template, lang=lang, dry_run=dry_run, progress=progress("answering"), executor=executor)
    print_answer_outcome(res, console())
    if res.failed:
        raise typer.Exit(1)


@app.command("pairwise")
@llm_options(scoring=False)
def pairwise_cmd(
    llm: LLMOptions,
    qa: str = typer.Option(..., "--qa", help="Question set (JSONL) or a bundled name."),
    answers: str = typer.Option(..., "--answers", help="Answers JSONL with a 'pipeline' field holding both pipelines."),
    a: str = typer.Option(..., "--a", help="Pipeline A (the baseline)."),
    b: str = typer.Option(..., "--b", help="Pipeline B (the candidate)."),
    repeat: int = typer.Option(1, "--repeat", help="Ask each order N times (each order's winner: the majority)."),
    dry_run: DryRun = False,
    out: Optional[Path] = typer.Option(None, "--out", help="Write the pairs and the summary as JSON to FILE."),
    json_out: JsonOut = False,
    list_n: int = typer.Option(10, "--list", min=0, help="List up to N inconsistent pairs (0: none)."),
) -> None:
    """Judge two pipelines' answers to the same questions side by side, in both orders: a verdict counts only
    when both orders agree (docs/judge.md).  Exits 1 when no pair could be judged."""
    from ragexam.api import pairwise
    from ragexam.report.console_judge import print_pairwise

    res = pairwise(qa, answers, llm.settings(), a=a, b=b, repeat=repeat, dry_run=dry_run, out=out,
                   progress=progress("judging", tty=not json_out), **llm.judge())
    show(json_out, res.to_dict, lambda c: print_pairwise(res.to_dict(), c, list_n=list_n),
         plan=res if dry_run else None)
    if not dry_run:
        s = res.summary()
        if s.n and not s.n_judged:
            reasons = ", ".join(f"{k}: {v}" for k, v in s.unjudged.items())
            notes([f"nothing was judged: 0 of {s.n} pairs ({reasons})"], json_out)
            raise typer.Exit(1)


@app.command("judge-agreement")
@llm_options()
def judge_agreement_cmd(
    llm: LLMOptions,
    qa: str = typer.Option(..., "--qa", help=late_help("judge-agreement", "qa", "ragexam.cli_answers:human_qa_help")),
    answers: str = typer.Option(..., "--answers", help="The answers the humans labelled (a 'human' object on an "
                                                       "answer line overrides the question's)."),
    metric: Optional[List[str]] = typer.Option(None, "--metric", "-m", help=late_help(
        "judge-agreement", "metric", "ragexam.cli_answers:agreement_metric_help")),
    weights: str = typer.Option("quadratic", "--weights", help="Weighted kappa for the 1-5 scales: none, linear, "
                                                               "quadratic."),
    top: int = typer.Option(10, "--top", help="Largest disagreements to list."),
    run: Optional[Path] = typer.Option(None, "--run", help="Run folder (the retrieved contexts, for the metrics that "
                                                           "judge them)."),
    pipeline: Optional[str] = typer.Option(None, "--pipeline", help="Pipeline of the run the answers belong to."),
    corpus: Optional[str] = typer.Option(None, "--corpus", help="Corpus of the run."),
    dry_run: DryRun = False,
    json_out: JsonOut = False,
) -> None:
    """Compare LLM-judge scores with human labels: Cohen's kappa (weighted), Spearman, and the largest
    disagreements to read."""
    from ragexam.api import judge_agreement

    opts = llm.judge()
    opts.pop("retry_unjudged", None)
    res = judge_agreement(qa, answers, llm.settings(), metrics=commas(metric, "--metric"), weights=weights, top=top, run=run,
                          pipeline=pipeline, corpus=corpus, dry_run=dry_run,
                          progress=progress("judging", tty=not json_out), **opts)
    from ragexam.report.console_score import print_agreement

    def data() -> dict:
        jr = res.judge_run
        return {"judge": {"model": jr.model, "endpoint": jr.endpoint, "signatures": jr.signatures,
                          "usage": jr.usage}, "metrics": {m: a.to_dict() for m, a in res.results.items()}}

    show(json_out, data, lambda c: print_agreement(res, c), plan=res.plan)


@app.command("judge-check")
@llm_options()
def judge_check_cmd(
    llm: LLMOptions,
    qa: str = typer.Option(..., "--qa", help="Question set (JSONL) or a bundled name: its answerable questions with "
                                             "evidence make the contrast set."),
    corpus: str = typer.Option(..., "--corpus", help="Its corpus (file or bundled name): the evidence chunks and the "
                                                     "negatives come from it."),
    metric: Optional[List[str]] = typer.Option(None, "--metric", "-m", help=late_help(
        "judge-check", "metric", "ragexam.cli_answers:check_metric_help")),
    rubric: Optional[List[Path]] = typer.Option(None, "--rubric", help="A custom rubric file (docs/judge.md) to "
                                                "check too; repeatable."),
    chunker: str = typer.Option("paragraphs:400", "--chunker", help="How the corpus is cut into contexts."),
    limit: Optional[int] = typer.Option(None, "--limit", help="Check on a seeded sample of N questions (default: "
                                                              "all)."),
    check_seed: int = typer.Option(12345, "--check-seed", help="Seed of the sample, the negatives and the "
                                                               "bootstrap."),
    dry_run: DryRun = False,
    out: Optional[Path] = typer.Option(None, "--out", help="Write the check (every item and score) as JSON."),
    json_out: JsonOut = False,
) -> None:
    """Does this judge separate good from bad on your own questions?  Judges a contrast set (each question's
    evidence context vs a hard negative and a random one; the reference answer vs a perturbed one) and reports
    per metric the ROC AUC with its 95% interval, the score gap, the pairs ordered correctly and a verdict --
    with sampled and probability-weighted scores.  Exits 1 when nothing could be judged."""
    from ragexam.api import judge_check
    from ragexam.report.console_judge import print_judge_check

    settings = llm.settings()
    res = judge_check(qa, corpus, settings, metrics=commas(metric, "--metric"), chunker=chunker, limit=limit, seed=check_seed,
                      scoring=settings.scoring, dry_run=dry_run, out=out, rubrics=rubric or (),
                      progress=progress("judging", tty=not json_out),
                      **{k: v for k, v in llm.judge().items() if k != "retry_unjudged"})
    show(json_out, lambda: res.check.to_dict(), lambda c: print_judge_check(res.check.to_dict(), c), plan=res.plan)
    if res.plan is not None:
        return
    notes(res.lines, json_out)
    if not any(c.n_judged for c in res.check.checks.values()):
        notes(["nothing was judged: see the unjudged reasons"], json_out)
        raise typer.Exit(1)


llm_app = typer.Typer(help="What an LLM endpoint supports.", no_args_is_help=True)
app.add_typer(llm_app, name="llm")


@llm_app.command("probe")
@llm_options(model="--model", model_help="Model name on the endpoint.")
def llm_probe_cmd(
    llm: LLMOptions,
    refresh: bool = typer.Option(False, "--refresh", help="Ask again instead of reading the stored answer."),
    fitness: bool = typer.Option(False, "--fitness", help="Also measure what the model is fit for on your data: a "
                                 "judge-check on a small sample of --qa and a few generation calls on --corpus "
                                 "(the calls are printed before the first one)."),
    corpus: Optional[str] = typer.Option(None, "--corpus", help="With --fitness: the corpus (file or bundled name)."),
    qa: Optional[str] = typer.Option(None, "--qa", help="With --fitness: a question set of the corpus with evidence "
                                                       "and ground truths (file or bundled name)."),
    sample: Optional[int] = typer.Option(None, "--sample", help="With --fitness: questions of the judge-check "
                                                                "(default 12; a verdict needs 10)."),
    generation_calls: Optional[int] = typer.Option(None, "--generation-calls", help="With --fitness: generation "
                                                   "calls, their checks included (default 18: about 3 generation calls)."),
    json_out: JsonOut = False,
) -> None:
    """Ask the endpoint once whether it supports json_schema (and enforces it), json_object, logprobs and seed;
    the answer is kept in the LLM cache and read by the judge's --scoring auto.  With --fitness, also which jobs
    the model is fit for on your data (judging each metric, generating questions) and what they cost."""
    from ragexam.report.console_judge import print_probe

    if not fitness:
        if corpus or qa or sample is not None or generation_calls is not None:
            raise typer.BadParameter("--corpus, --qa, --sample and --generation-calls go with --fitness")
        from ragexam.api import llm_probe

        res = llm_probe(llm.settings(), refresh=refresh)
        show(json_out, res.to_dict, lambda c: print_probe(res.to_dict(), c))
        return
    if not corpus or not qa:
        raise typer.BadParameter("--fitness needs --corpus and --qa (a question set with evidence of that corpus)")
    from ragexam.api import llm_fitness
    from ragexam.report.console_judge import print_fitness

    opts = {k: v for k, v in llm.judge().items() if k in ("max_attempts", "judge_lang")}
    found = llm_fitness(llm.settings(), corpus, qa, sample=sample, generation_calls=generation_calls,
                        announce=lambda b: notes([b.text()], json_out),
                        progress=progress("judging") if not json_out else None, **opts)
    show(json_out, found.to_dict, lambda c: print_fitness(found.to_dict(), c))
