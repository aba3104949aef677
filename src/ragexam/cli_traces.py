"""The production-trace commands of the ``ragexam`` command line: ``traces import`` and ``traces sample``.

Registered on the one application of :mod:`ragexam.cli_options` (see :mod:`ragexam.cli_answers`); each parses its
options, calls one :mod:`ragexam.api` function and renders what it returns (:mod:`ragexam.report.console_traces`).
docs/traces.md is the how-to.
"""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from ragexam.cli_options import app, console, Group, JsonOut, print_json, progress, show

traces_app = typer.Typer(help="Production traces (Langfuse, Phoenix, OpenTelemetry): import them as an answers file; "
                              "sample their questions as exam candidates.", no_args_is_help=True, cls=Group)
app.add_typer(traces_app, name="traces")


@traces_app.command("import")
def traces_import_cmd(
    files: List[Path] = typer.Argument(..., help="Export files: JSONL, JSON or Parquet (.gz too)."),
    out: Optional[Path] = typer.Option(None, "--out", help="Answers file to write (JSONL). Required unless --explain."),
    fmt: str = typer.Option("auto", "--format", help="langfuse, phoenix, otel, or auto (each file's first record "
                                                     "says)."),
    mapping: Optional[List[str]] = typer.Option(None, "--map", help="Override the mapping, KEY=VALUE (repeatable): "
                                                "retrieval=SPAN_NAME, generation=SPAN_NAME, question=PATH, "
                                                "answer=PATH, doc_id=KEY, doc_text=KEY, doc_score=KEY."),
    redact: bool = typer.Option(False, "--redact", help="Replace e-mail addresses, phone, resident registration, "
                                                        "card and account numbers before writing."),
    hash_salt: str = typer.Option("", "--hash-salt", envvar="RAGEXAM_HASH_SALT", help="Secret mixed into the hashes "
                                  "of user and session ids (env RAGEXAM_HASH_SALT)."),
    explain: bool = typer.Option(False, "--explain", help="Show how the traces map: spans by role and the first "
                                                          "traces' mapping."),
    explain_traces: int = typer.Option(3, "--explain-traces", help="How many traces --explain shows."),
    json_out: JsonOut = False,
) -> None:
    """Import production traces as an answers file: question, answer, contexts with ids and scores, model, latency,
    tokens, hashed user/session, tags, feedback. Traces that cannot be mapped are counted by reason. Exits 1 when
    none could be imported."""
    from ragexam import api
    from ragexam.errors import InputError
    from ragexam.report.console_traces import print_import

    if out is None and not explain:
        raise InputError("is missing; give the answers file to write (or --explain to see the mapping without "
                         "writing)", source="--out", field="out")
    res = api.import_traces(files, out, fmt=fmt, mapping=mapping or (), redact=redact, hash_salt=hash_salt,
                            explain=explain_traces if explain else 0,
                            progress=progress("reading spans") if not json_out else None)
    if json_out:
        print_json(res.to_dict())
    else:
        print_import(res, console(), explain=explain)
    if not res.imported:
        raise typer.Exit(1)


@traces_app.command("sample")
def traces_sample_cmd(
    answers: Path = typer.Argument(..., help="Answers file written by `ragexam traces import`."),
    n: int = typer.Option(..., "-n", "--n", help="Candidates wanted."),
    corpus: str = typer.Option(..., "--corpus", help="The corpus the evidence is located in (JSONL, .csv or a bundled "
                                                     "name)."),
    out: Path = typer.Option(..., "--out", help="Candidate set to write (JSONL); its rejects, card and review sheet go "
                                                "next to it."),
    threshold: Optional[float] = typer.Option(None, "--threshold", help="e5 cosine at which two questions with the "
                                              "same numbers are near-duplicates (default 0.92, measured)."),
    strategy: str = typer.Option("weighted", "--strategy", help="weighted (by frequency, seeded) or top (most "
                                                                "frequent)."),
    first: Optional[List[str]] = typer.Option(None, "--first", help="Put these first: negative (thumbs down) or "
                                              "NAME<X (a feedback score below X); repeatable."),
    seed: int = typer.Option(12345, "--seed", help="Seed of the weighted sampling."),
    id_prefix: str = typer.Option("trace", "--id-prefix", help="Query ids are PREFIX_0001, ..."),
    redact: bool = typer.Option(False, "--redact", help="Replace personal data in the questions and answers "
                                                        "written."),
    json_out: JsonOut = False,
) -> None:
    """Pick questions that represent the traffic (near-duplicates clustered and counted), locate their evidence in
    the corpus, and write them for review (`ragexam review apply`). Exits 1 when fewer than N were kept."""
    from ragexam import api
    from ragexam.report.console_traces import print_sample

    res = api.sample_traces(answers, n, corpus, out, threshold=threshold, strategy=strategy, seed=seed,
                            first=first or (), id_prefix=id_prefix, redact=redact)
    show(json_out, lambda: dict(res.card, out=str(out)), lambda c: print_sample(res, c, out))
    if res.shortfall:
        raise typer.Exit(1)
