"""The question-set commands that turn a team's own set into an exam: ``locate-evidence``.

Registered on the one application of :mod:`ragexam.cli_options` (see :mod:`ragexam.cli_answers`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ragexam.cli_options import (ApiKey, app, BaseUrl, CacheDir, Concurrency, console, DryRun, JsonOut, llm_settings,
                                 MaxRetries, NoCache, Price, print_json, progress, Timeout)


@app.command("locate-evidence")
def locate_evidence_cmd(
    corpus: str = typer.Option(..., "--corpus", help="Corpus (JSONL or .csv), a BEIR folder or a bundled name."),
    qa: str = typer.Option(..., "--qa", help="Question set (JSONL) whose answerable questions lack evidence; it is "
                                             "never changed."),
    out: Optional[Path] = typer.Option(None, "--out", help="Located set to write (JSONL); its card and review sheet "
                                                           "go next to it. Required unless --dry-run."),
    threshold: Optional[float] = typer.Option(None, "--threshold", help="Confidence (0-1) a located span needs to be "
                                              "written as evidence (default: the measured one, "
                                              "docs/measurements/locate.md)."),
    no_e5: bool = typer.Option(False, "--no-e5", help="Score without the offline e5 similarity (faster; measured "
                                                       "in docs/evidence.md)."),
    no_windows: bool = typer.Option(False, "--no-windows", help="Single sentences only (no two-sentence windows)."),
    model: Optional[str] = typer.Option(None, "--model", help="A model confirms each located span ('does this span "
                                                              "support this answer?'), on an OpenAI-compatible "
                                                              "endpoint; cached."),
    base_url: BaseUrl = None, api_key: ApiKey = None, concurrency: Concurrency = 4, timeout: Timeout = 60.0,
    max_retries: MaxRetries = 4, cache_dir: CacheDir = None, no_cache: NoCache = False, price: Price = None,
    dry_run: DryRun = False, json_out: JsonOut = False,
) -> None:
    """Find the evidence of every answerable question that has none: the span of its relevant documents (or of the
    whole corpus) that supports its answer key, with the runner-up and a confidence. Confident spans become
    evidence; the others are marked uncertain or unlocated for review (the review sheet next to --out). Exits 1 when
    questions needed evidence and none was located."""
    from ragexam import api
    from ragexam.report.console_locate import print_locate, print_locate_plan

    llm = None
    if model is not None:
        llm = llm_settings(model, base_url, api_key, concurrency=concurrency, temperature=0.0, max_tokens=None,
                           seed=None, timeout=timeout, max_retries=max_retries, cache_dir=cache_dir,
                           no_cache=no_cache, price=price)
    if dry_run:
        plan = api.locate_evidence(corpus, qa, threshold=threshold, semantic=not no_e5, windows=not no_windows,
                                   llm=llm, dry_run=True)
        return print_json(plan.to_dict()) if json_out else print_locate_plan(plan, console())
    res = api.locate_evidence(corpus, qa, out, threshold=threshold, semantic=not no_e5, windows=not no_windows,
                              llm=llm, progress=progress("locating"))
    if json_out:
        print_json(res.to_dict())
    else:
        print_locate(res, console(), out)
    if res.searched and not res.counts["located"]:
        raise typer.Exit(1)
