"""The question-generation commands of the ``ragexam`` command line: ``generate`` and ``review apply`` / ``audit`` /
``queue``.

Registered on the one application of :mod:`ragexam.cli_options` (see :mod:`ragexam.cli_answers`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable, Dict, List, Optional

import typer

from ragexam.cli_options import (ApiKey, app, BaseUrl, CacheDir, Concurrency, console, CorpusOpt, DryRun, Group,
                                 JsonOut, llm_settings, MaxRetries, MaxTokens, NoCache, Price, print_json, progress,
                                 ResponseFormat, show, Timeout)

if TYPE_CHECKING:
    from ragexam.llm.settings import LLMSettings


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
    skip_check: Optional[List[str]] = typer.Option(
        None, "--skip-check", help="Switch a check off (repeatable): injection, guards, premise, title, fragment, critic, reader, faithfulness."),  # noqa: E501 (one line: tests find every check's name)
    agree_at: int = typer.Option(4, "--agree-at", help="The judge's answer-correctness score (1-5) at which the "
                                                       "reader's answer agrees with the key."),
    prompt: Optional[Path] = typer.Option(None, "--prompt", help="A prompt file replacing the bundled one "
                                                                 "(see docs/generate.md)."),
    judge_model: Optional[str] = typer.Option(None, "--judge-model", help="Model of the LLM checks (default: "
                                              "--model, the generator checking itself; then multi is left out of the "
                                              "default mix)."),
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
    max_generation_calls: Optional[int] = typer.Option(None, "--max-generation-calls", help="Generation calls this "
                                                       "run may make (the checks not counted; cached ones are free)."),
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
    from ragexam.questions.config import default_temperature, parse_kinds

    if temperature is None:
        temperature = default_temperature(cite)
    settings = llm_settings(model, base_url, api_key, concurrency=concurrency, temperature=temperature,
                            max_tokens=max_tokens, seed=None, timeout=timeout, max_retries=max_retries,
                            cache_dir=cache_dir, no_cache=no_cache, price=price, response_format=response_format)
    options = dict(mix=mix, kinds=parse_kinds(kind), per_call=per_call, language=lang, prompt=prompt,
                   retriever=retriever, ooc_top=ooc_top, ooc_max_relevance=ooc_max_relevance, ambiguous=ambiguous,
                   dedup_at=dedup_at, section_chars=section_chars, seed=seed, max_passes=max_passes,
                   max_calls=max_calls, max_generation_calls=max_generation_calls, budget=budget, id_prefix=id_prefix,
                   max_attempts=max_attempts, prompt_language=prompt_lang, cite=cite, skip_checks=tuple(skip_check or ()), agree_at=agree_at)
    _generate(corpus, n, out, settings, judge_model, options, dry_run=dry_run, json_out=json_out)


def _generate(corpus: str, n: int, out: Optional[Path], settings: "LLMSettings", judge_model: Optional[str],
              options: Dict[str, object], *, dry_run: bool, json_out: bool) -> None:
    """``generate``'s one api call (the plan with ``dry_run``) and its rendering; exit 1 on a shortfall."""
    from ragexam import api
    from ragexam.errors import InputError
    from ragexam.report.console_generate import print_generate, print_generate_plan

    if dry_run:
        p = api.generate_plan(corpus, n, settings=settings, judge_model=judge_model, out=out, **options)
        return print_json(p.to_dict()) if json_out else print_generate_plan(p, console())
    if out is None:
        raise InputError("needs --out FILE.jsonl (or --dry-run)", source="ragexam generate", field="out")
    bars: Dict[str, Optional[Callable[[int, int], None]]] = {}

    def bar(label: str, done: int, total: int) -> None:
        cb = bars.setdefault(label, progress(label))
        if cb is not None:
            cb(done, total)

    res = api.generate(corpus, n, settings=settings, out=out, judge_model=judge_model, progress=bar, **options)
    show(json_out, lambda: dict(res.card, files={k: str(v) for k, v in res.written.items()}),
         lambda c: print_generate(res, c))
    if res.shortfall:
        raise typer.Exit(1)


review_app = typer.Typer(help="Apply a person's review of a generated or located question set.", no_args_is_help=True,
                         cls=Group)
app.add_typer(review_app, name="review")


@review_app.command("apply")
def review_apply_cmd(
    qa: Path = typer.Option(..., "--qa", help="The generated set, or the located set of `ragexam locate-evidence` "
                                              "(JSONL), the sheet reviews."),
    out: Path = typer.Option(..., "--out", help="Reviewed set to write (JSONL)."),
    review: Optional[Path] = typer.Option(None, "--review", help="The edited review sheet (default: the set's "
                                                                 ".review.csv)."),
    corpus: CorpusOpt = None,
    pending: str = typer.Option("keep", "--pending", help="Rows still pending: keep or drop."),
    max_junk: Optional[float] = typer.Option(None, "--max-junk", help="Refuse (exit 1, nothing written) when the "
                                             "written set's junk upper bound (95%, from the set's audit and what the "
                                             "review left unread) is above RATE, e.g. 0.1; a set whose every "
                                             "question was reviewed passes."),
    json_out: JsonOut = False,
) -> None:
    """Keep accepted questions (with their verification records), drop rejected ones, check edited ones again (a
    located set: accepted questions take their proposed span, or the evidence cell; docs/evidence.md)."""
    from ragexam import api
    from ragexam.report.console_generate import print_review

    res = api.review_apply(qa, out, review=review, corpus=corpus, pending=pending, max_junk=max_junk)
    show(json_out, lambda: dict(res.to_dict(), out=None if res.refused else str(out)),
         lambda c: print_review(res, c, out))
    if res.refused:
        raise typer.Exit(1)


@review_app.command("audit")
def review_audit_cmd(
    qa: Path = typer.Argument(..., help="The question set (JSONL) to audit."),
    sample: Optional[int] = typer.Option(None, "--sample", help="Questions in the random sample (default 20; a "
                                         "larger number later extends the same sample)."),
    seed: Optional[int] = typer.Option(None, "--seed", help="Seed of the sample (default 12345, or the one the "
                                       "audit started with)."),
    sheet: Optional[Path] = typer.Option(None, "--sheet", help="Write the sample as a sheet (CSV) to label, for "
                                         "scripts and CI; then read it back with --labels."),
    labels: Optional[Path] = typer.Option(None, "--labels", help="Read a filled sheet's labels back."),
    restart: bool = typer.Option(False, "--restart", help="Discard the audit's labels and draw a new sample."),
    interactive: bool = typer.Option(False, "--interactive", help="Label in the terminal even when stdin is not "
                                     "a terminal (the default on a terminal)."),
    json_out: JsonOut = False,
) -> None:
    """Audit a question set: a person labels a seeded random sample good or bad (with a reason); ragexam estimates
    the set's junk rate with an exact, finite-population interval, kept beside the set (QA.audit.json)."""
    import sys

    from ragexam import api
    from ragexam.report.console_audit import print_audit

    opened, queue = api.review_audit(qa, sample=sample, seed=seed, restart=restart, sheet=sheet, labels=labels)
    if sheet is None and labels is None and (interactive or (sys.stdin.isatty() and not json_out)):
        _audit_in_terminal(qa)
        opened, queue = api.review_audit(qa)
    if json_out:
        return print_json({"audit": opened.status.to_dict(), "sample": list(opened.audit.sample),
                           "signals": queue.check.to_dict(), "notes": opened.notes,
                           "sheet": None if sheet is None else str(sheet)})
    print_audit(console(), opened, queue, sheet)


def _audit_in_terminal(qa: Path) -> None:
    """Label the sample one question at a time with single keys (g, 1-6, u, q)."""
    from ragexam.questions.audit import GOOD_KEY, REASONS, read_audit
    from ragexam.questions.auditing import AuditSet, label_question, next_question, undo_label
    from ragexam.report.console_audit import audit_keys, print_audit_item

    con = console()
    records = AuditSet.load(qa).records
    by_key = {key: code for code, (key, _, _) in REASONS.items()}
    while True:
        audit = read_audit(qa)
        qid = next_question(audit) if audit is not None else None
        if audit is None or qid is None:
            return
        print_audit_item(con, records[qid], audit.sample.index(qid) + 1, len(audit.sample))
        key = typer.getchar()
        if key == GOOD_KEY:
            label_question(qa, qid, "good")
        elif key in by_key:
            label_question(qa, qid, "bad", by_key[key])
        elif key == "u":
            undone = undo_label(qa)
            con.print(f"undone: {undone}" if undone else "nothing to undo", highlight=False, markup=False)
        elif key in ("q", "\x03", "\x04", "\x1b"):
            return
        else:
            con.print(f"unknown key {key!r}: {audit_keys()}", highlight=False, markup=False)


@review_app.command("queue")
def review_queue_cmd(
    qa: Path = typer.Option(..., "--qa", help="The question set (JSONL) to review."),
    target: float = typer.Option(0.1, "--target", help="Junk rate (95% upper bound) the rest of the queue must be "
                                                       "predicted under for the stop point."),
    top: int = typer.Option(20, "--top", help="Questions of the queue to list."),
    json_out: JsonOut = False,
) -> None:
    """The review queue: likely junk first when the set's audit shows the checks' signals tell junk from good
    (ROC AUC with an interval), else random; and where a reviewer may stop."""
    from ragexam import api
    from ragexam.report.console_audit import print_queue, queue_json

    q = api.review_queue(qa, target=target)
    if json_out:
        return print_json(queue_json(q.queue, q.status, q.stop))
    print_queue(console(), q.queue, q.set.records, q.status, q.stop, q.target, top, q.set.qa)
