"""The question-set commands that turn a team's own set into an exam: ``locate-evidence``.

Registered on the one application of :mod:`ragexam.cli_options` (see :mod:`ragexam.cli_answers`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ragexam.cli_options import app, console, DryRun, JsonOut, llm_options, LLMOptions, print_json, progress, show


@app.command("locate-evidence")
@llm_options(model="--model", required=False, judge=False,
             model_help="A model confirms each located span ('does this span support this answer?'), on an "
                        "OpenAI-compatible endpoint; cached.")
def locate_evidence_cmd(
    llm: LLMOptions,
    corpus: str = typer.Option(..., "--corpus", help="Corpus (JSONL or .csv), a BEIR folder or a bundled name."),
    qa: str = typer.Option(..., "--qa", help="Question set (JSONL) whose answerable questions lack evidence; it is "
                                             "never changed."),
    out: Optional[Path] = typer.Option(None, "--out", help="Located set to write (JSONL); its card and review sheet "
                                                           "go next to it. Required unless --dry-run."),
    threshold: Optional[float] = typer.Option(None, "--threshold", help="Confidence (0-1) a located span needs to be "
                                              "written as evidence (default: the measured one, "
                                              "docs/measurements/locate.md)."),
    no_e5: bool = typer.Option(False, "--no-e5", help="Score without the offline e5 similarity (faster; measured "
                                                       "in docs/measurements/locate.md)."),
    no_windows: bool = typer.Option(False, "--no-windows", help="Single sentences only (no two-sentence windows)."),
    dry_run: DryRun = False, json_out: JsonOut = False,
) -> None:
    """Find the evidence of every answerable question that has none: the span of its relevant documents (or of the
    whole corpus) that supports its answer key, with the runner-up and a confidence. Confident spans become
    evidence; the others are marked uncertain or unlocated for review (the review sheet next to --out). Exits 1 when
    questions needed evidence and none was located, or when --model was given and every check failed."""
    from ragexam import api
    from ragexam.report.console_locate import print_locate, print_locate_plan

    settings = llm.settings()
    if dry_run:
        plan = api.locate_evidence(corpus, qa, threshold=threshold, semantic=not no_e5, windows=not no_windows,
                                   llm=settings, dry_run=True)
        return print_json(plan.to_dict()) if json_out else print_locate_plan(plan, console())
    res = api.locate_evidence(corpus, qa, out, threshold=threshold, semantic=not no_e5, windows=not no_windows,
                              llm=settings, progress=progress("locating"))
    show(json_out, res.to_dict, lambda c: print_locate(res, c, out))
    if (res.searched and not res.counts["located"]) or res.model_failed:
        raise typer.Exit(1)
