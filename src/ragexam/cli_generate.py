"""The question-generation commands of the ``ragexam`` command line: ``generate`` and ``review apply``.

Registered on the one application of :mod:`ragexam.cli_options` (see :mod:`ragexam.cli_answers`).
"""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from ragexam.cli_options import (ApiKey, app, BaseUrl, CacheDir, Concurrency, console, CorpusOpt, DryRun, Group,
                                 JsonOut, llm_settings, MaxRetries, MaxTokens, NoCache, Price, print_json, progress,
                                 ResponseFormat, Timeout)


# --- commands: question generation ----------------------------------------------------------------------


@app.command("generate")
def generate_cmd(
    corpus: str = typer.Option(..., "--corpus", help="Corpus (JSONL or .csv) or a bundled name (it_helpdesk)."),
    out: Optional[Path] = typer.Option(None, "--out", help="Question set to write (JSONL); the rejects, the card and "
                                                           "the review sheet go next to it. Required unless --dry-run."),
    n: int = typer.Option(..., "-n", "--n", help="Questions wanted."),
    model: str = typer.Option(..., "--model", help="Generator model on an OpenAI-compatible endpoint."),
    mix: Optional[str] = typer.Option(None, "--mix", help="Target mix as KIND=WEIGHT pairs (default "
                                                          "meaning=0.4,lexical=0.35,multi=0.15,out_of_corpus=0.1)."),
    kind: Optional[List[str]] = typer.Option(None, "--kind", help="Add a kind: NAME=INSTRUCTION (repeatable); use "
                                                                  "NAME in --mix."),
    per_call: int = typer.Option(3, "--per-call", help="Questions asked for per call (1-10; 1 with --cite focus)."),
    lang: str = typer.Option("auto", "--lang", help="The questions' language: auto (Hangul share of the corpus), ko, "
                                                    "en."),
    prompt_lang: str = typer.Option("auto", "--prompt-lang", help="Language of the instructions: auto (the measured "
                                    "default, English; the questions stay in the corpus's language), ko, en."),
    cite: str = typer.Option("auto", "--cite", help="How evidence is chosen: focus (ragexam picks a sentence, the model "
                             "writes one question about it), spans (the model copies text; quote frames unwrapped) or "
                             "sentences (the model cites numbers of shown sentences). auto: the measured default, "
                             "focus."),
    skip_check: Optional[List[str]] = typer.Option(None, "--skip-check", help="Switch a check off (repeatable): "
                                                   "injection, guards, premise, critic, reader, faithfulness."),
    agree_at: int = typer.Option(4, "--agree-at", help="answer_correctness score (1-5) at which the reader's answer "
                                                       "agrees with the key."),
    prompt: Optional[Path] = typer.Option(None, "--prompt", help="A prompt file replacing the bundled one "
                                                                 "(see docs/generate.md)."),
    judge_model: Optional[str] = typer.Option(None, "--judge-model", help="Model of the LLM checks (default: "
                                                                          "--model)."),
    retriever: str = typer.Option("bm25", "--retriever", help="Retriever for related sections and the "
                                                              "out-of-corpus search."),
    ooc_top: int = typer.Option(5, "--ooc-top", help="Sections retrieved per out-of-corpus candidate."),
    ooc_max_relevance: int = typer.Option(3, "--ooc-max-relevance", help="Highest judged relevance (1-5) a top "
                                          "section may have for an out-of-corpus question."),
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
    id_prefix: str = typer.Option("gen", "--id-prefix", help="Query ids are PREFIX_0001, ..."),
    base_url: BaseUrl = None, api_key: ApiKey = None, concurrency: Concurrency = 4,
    temperature: Optional[float] = typer.Option(None, "--temperature", help="Generator temperature (default 0.7; 0 "
                                                "with --cite focus; the checks use 0)."),
    max_tokens: MaxTokens = None, timeout: Timeout = 60.0, max_retries: MaxRetries = 4,
    max_attempts: int = typer.Option(3, "--max-attempts", help="Replies per call before it counts as malformed."),
    response_format: ResponseFormat = "auto", cache_dir: CacheDir = None, no_cache: NoCache = False,
    price: Price = None, dry_run: DryRun = False, json_out: JsonOut = False,
) -> None:
    """Generate a question set from a corpus: every evidence string verified verbatim in the corpus, types measured,
    rejections counted by reason. Exits 1 when fewer than N questions passed."""
    from ragexam import api
    from ragexam.errors import InputError
    from ragexam.questions.api import parse_kinds
    from ragexam.report.console_generate import generate_files, print_generate, print_generate_plan

    from ragexam.questions.engine import default_temperature

    if temperature is None:
        temperature = default_temperature(cite)
    settings = llm_settings(model, base_url, api_key, concurrency=concurrency, temperature=temperature,
                            max_tokens=max_tokens, seed=None, timeout=timeout, max_retries=max_retries,
                            cache_dir=cache_dir, no_cache=no_cache, price=price, response_format=response_format)
    options = dict(mix=mix, kinds=parse_kinds(kind), per_call=per_call, language=lang, prompt=prompt,
                   retriever=retriever, ooc_top=ooc_top, ooc_max_relevance=ooc_max_relevance, ambiguous=ambiguous,
                   dedup_at=dedup_at, section_chars=section_chars, seed=seed, max_passes=max_passes,
                   max_calls=max_calls, budget=budget, id_prefix=id_prefix, max_attempts=max_attempts,
                   prompt_language=prompt_lang, cite=cite, skip_checks=tuple(skip_check or ()), agree_at=agree_at)
    if dry_run:
        p = api.generate(corpus, n, settings, dry_run=True, judge_model=judge_model, **options)
        return print_json(p.to_dict()) if json_out else print_generate_plan(p, console())
    if out is None:
        raise InputError("needs --out FILE.jsonl (or --dry-run)", source="ragexam generate", field="out")
    bars: dict = {}

    def bar(label: str, done: int, total: int) -> None:
        cb = bars.setdefault(label, progress(label))
        if cb is not None:
            cb(done, total)

    res = api.generate(corpus, n, settings, out=out, judge_model=judge_model, progress=bar, **options)
    if json_out:
        print_json(dict(res.card, files=generate_files(out)))
    else:
        print_generate(res, console(), out)
    if res.shortfall:
        raise typer.Exit(1)


review_app = typer.Typer(help="Apply a person's review of a generated question set.", no_args_is_help=True,
                         cls=Group)
app.add_typer(review_app, name="review")


@review_app.command("apply")
def review_apply_cmd(
    qa: Path = typer.Option(..., "--qa", help="The generated set (JSONL) the sheet reviews."),
    out: Path = typer.Option(..., "--out", help="Reviewed set to write (JSONL)."),
    review: Optional[Path] = typer.Option(None, "--review", help="The edited review sheet (default: the set's "
                                                                 ".review.csv)."),
    corpus: CorpusOpt = None,
    pending: str = typer.Option("keep", "--pending", help="Rows still pending: keep or drop."),
    json_out: JsonOut = False,
) -> None:
    """Keep accepted questions (with their verification records), drop rejected ones, check edited ones again."""
    from ragexam import api
    from ragexam.report.console_generate import print_review

    res = api.review_apply(qa, out, review=review, corpus=corpus, pending=pending)
    return print_json(dict(res.to_dict(), out=str(out))) if json_out else print_review(res, console(), out)
