"""The command line's option groups, declared once, and the small helpers every command shares.

:mod:`ragexam.cli` builds its commands from the annotated option types here: an option used by several
commands (the LLM endpoint, the outputs, the history, the run settings) has one name, one default and one help
text.  :func:`llm_settings` turns the LLM endpoint group into one validated
:class:`~ragexam.llm.settings.LLMSettings`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any, Callable, Dict, List, Optional, Tuple

import typer

from ragexam.data.chunking import chunker_help

#: help texts owned by a module the CLI does not import at start (the ranking metrics import numpy): filled in when
#: their command is invoked, so ``ragexam --help`` stays fast; ``{(command, option): "module:function"}``
_LATE_HELP: Dict[Tuple[str, str], str] = {}


def late_help(command: str, option: str, owner: str) -> str:
    """Register ``owner`` (``"module:function"``, returning the help text) as the help of ``--option`` of
    ``command``, filled in when the command is invoked; returns the text shown until then."""
    _LATE_HELP[(command, option)] = owner
    return f"See `ragexam {command} --help`."


class Group(typer.core.TyperGroup):
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

    def resolve_command(self, ctx, args):
        name, cmd, rest = super().resolve_command(ctx, args)
        for p in getattr(cmd, "params", ()):
            owner = _LATE_HELP.get((name, p.name))
            if owner is not None:
                import importlib

                module, fn = owner.split(":")
                p.help = getattr(importlib.import_module(module), fn)()
        return name, cmd, rest

    def format_help(self, ctx, formatter):
        self._untyped_flags(self, ctx)
        super().format_help(ctx, formatter)



#: the one ``ragexam`` application; :mod:`ragexam.cli`, :mod:`ragexam.cli_answers` and
#: :mod:`ragexam.cli_generate` register their commands on it
app = typer.Typer(name="ragexam", help="Grade retrieval-augmented generation pipelines like a mock exam.",
                  no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False, cls=Group)


def console():
    """The one console factory (:func:`ragexam.report.terminal.console`)."""
    from ragexam.report.terminal import console as make

    return make()


def print_json(obj: Any) -> None:
    import json

    sys.stdout.write(json.dumps(obj, ensure_ascii=False, indent=2, allow_nan=False) + "\n")


def commas(values: Optional[List[str]]) -> Optional[List[str]]:
    """Repeated and comma-separated values as one list (``None`` when none were given)."""
    out = [p.strip() for v in values or () for p in v.split(",") if p.strip()]
    return out or None


def progress(label: str):
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


def show(json_out: bool, data: Callable[[], Any], table: Callable[[Any], None], *, plan: Any = None) -> None:
    """Render a command's outcome: with a dry-run ``plan``, the plan (its ``to_dict()`` with --json, else the
    plan table); otherwise ``data()`` as JSON with --json, else ``table(console)``."""
    if plan is not None:
        from ragexam.report.console_score import print_plan

        data, table = plan.to_dict, lambda c: print_plan(plan, c)
    if json_out:
        print_json(data())
    else:
        table(console())


def notes(lines: List[str], json_out: bool, console=None) -> None:
    for line in lines:
        if json_out:
            sys.stderr.write(line + "\n")
        else:
            (console or globals()['console']()).print(line, highlight=False, markup=False, soft_wrap=True)


# --- option groups, declared once ----------------------------------------------------------------------------

_HISTORY_HELP = ("History database (default: $RAGEXAM_HISTORY, else $RAGEXAM_HOME/history.sqlite3, else "
                 "$XDG_DATA_HOME/ragexam/history.sqlite3 or ~/.local/share/ragexam/history.sqlite3).")
JsonOut = Annotated[bool, typer.Option("--json", help="Print JSON on stdout instead of tables.")]
HistoryOpt = Annotated[Optional[Path], typer.Option("--history", help=_HISTORY_HELP)]
NoHistory = Annotated[bool, typer.Option("--no-history", help="Do not record this in the history database.")]
ReportOpt = Annotated[Optional[Path], typer.Option("--report", help="Also write the self-contained HTML report "
                                                                    "to FILE.html.")]
CorpusOpt = Annotated[Optional[str], typer.Option("--corpus", help="Corpus file (JSONL or .csv), a BEIR folder or a "
                                                                   "bundled name (it_helpdesk, ai_concepts).")]
RunDir = Annotated[Optional[Path], typer.Option("--run", help="Folder of `ragexam run --out DIR`.")]
# the LLM endpoint (ragexam.llm.settings.LLMSettings)
BaseUrl = Annotated[Optional[str], typer.Option("--base-url", help="Endpoint root, e.g. http://localhost:11434/v1 "
                                                                   "(default $OPENAI_BASE_URL, then .env, else OpenAI).")]
ApiKey = Annotated[Optional[str], typer.Option("--api-key", help="API key (default $OPENAI_API_KEY, then .env; "
                                                                 "prefer those: arguments show in process lists).")]
Concurrency = Annotated[int, typer.Option("--concurrency", help="Calls in flight at once.")]
Temperature = Annotated[float, typer.Option("--temperature", help="Sampling temperature.")]
MaxTokens = Annotated[Optional[int], typer.Option("--max-tokens", help="Completion limit per reply (default: "
                                                                       "1024 for the judge, 512 for answers, 2048 "
                                                                       "for questions).")]
LlmSeed = Annotated[Optional[int], typer.Option("--seed", help="Seed passed to the endpoint (if it honours one).")]
Timeout = Annotated[float, typer.Option("--timeout", help="Seconds per HTTP request.")]
MaxRetries = Annotated[int, typer.Option("--max-retries", help="Retries on 429/5xx/timeouts per request.")]
ResponseFormat = Annotated[str, typer.Option("--response-format", help="auto, json_schema, json_object or none.")]
CacheDir = Annotated[Optional[Path], typer.Option("--cache-dir", help="LLM cache directory (default "
                                                                      "$RAGEXAM_CACHE_DIR or ~/.cache/ragexam).")]
NoCache = Annotated[bool, typer.Option("--no-cache", help="Do not read or write the LLM cache.")]
Price = Annotated[Optional[str], typer.Option("--price", help="USD per 1M tokens as IN,OUT (overrides the table).")]
DryRun = Annotated[bool, typer.Option("--dry-run", help="Print the calls and estimated tokens and cost; send "
                                                        "nothing.")]
# the judge
JUDGE_METRICS = ("context_relevance, context_precision, context_recall, faithfulness, answer_relevancy, "
                 "answer_correctness, abstention, or a --rubric file's name")
MaxAttempts = Annotated[int, typer.Option("--max-attempts", help="Replies per judgment before it is unjudged.")]
JudgeLang = Annotated[str, typer.Option("--judge-lang", help="Prompt language: auto (Hangul share), ko, en.")]
RetryUnjudged = Annotated[bool, typer.Option("--retry-unjudged", help="Re-judge cached unjudged results.")]


def llm_settings(model: str, base_url, api_key, *, concurrency, temperature, max_tokens, seed, timeout, max_retries,
         cache_dir, no_cache, price, response_format: str = "auto"):
    """The endpoint option group as one validated :class:`~ragexam.llm.settings.LLMSettings`."""
    from ragexam.llm.cost import parse_price
    from ragexam.llm.settings import LLMSettings

    return LLMSettings(model, base_url=base_url, api_key=api_key, timeout=timeout, max_retries=max_retries,
                       concurrency=concurrency, cache=not no_cache, cache_dir=cache_dir, price=parse_price(price),
                       temperature=temperature, max_tokens=max_tokens, seed=seed, response_format=response_format)



# `run` (and the commands that grade retrieval like it)
QaOpt = Annotated[Optional[str], typer.Option("--qa", help="Question set (JSONL), a BEIR folder or a bundled name.")]
Retrievers = Annotated[Optional[List[str]], typer.Option(
    "--retriever", "-r", help="Retriever spec, repeatable; the first is the baseline. bm25, bm25:whitespace, dense, "
    "dense:st:MODEL, dense:openai:MODEL, hybrid:bm25+dense, http:URL (your search service), and any of them "
    "followed by a rerank stage: 'bm25>rerank:dense', '>rerank:http:URL', '>rerank:llm:MODEL', '>rerank:st:MODEL' "
    "(?top=N). Default: bm25 and dense (none with --retrieved).")]
Retrieved = Annotated[Optional[List[str]], typer.Option(
    "--retrieved", help="Results file of your own pipeline (JSONL: query_id, pipeline?, contexts in rank order), "
    "repeatable; 'FILE>rerank:...' reranks it. Graded on the texts it returned.")]
Headers = Annotated[Optional[List[str]], typer.Option(
    "--header", help="HTTP header 'Name: value' sent to http: retrievers and rerank:http (repeatable); never "
    "stored or printed.")]
Split = Annotated[Optional[str], typer.Option("--split", help="Qrels split of a BEIR folder (default test).")]
Workers = Annotated[Optional[int], typer.Option("--workers", help="Threads/processes for tokenizing and embedding "
                                                                  "(default: every core), or Ray actors.")]
ExecutorOpt = Annotated[Optional[str], typer.Option(
    "--executor", help="Where tokenizing and embedding run: local (default), ray (Ray on this machine or "
    "$RAY_ADDRESS) or ray://HOST:PORT (pip install 'ragexam\\[ray]'; docs/scale.md).")]
CallsExecutorOpt = Annotated[Optional[str], typer.Option(
    "--executor", help="Where the model calls run: threads here (default), ray (Ray on this machine or "
    "$RAY_ADDRESS) or ray://HOST:PORT, with at most --concurrency calls in flight across the cluster "
    "(pip install 'ragexam\\[ray]'; docs/scale.md).")]
# `convert`
ConvertTo = Annotated[str, typer.Option(..., "--to", help="ragexam, beir or trec.")]
ConvertOut = Annotated[Path, typer.Option(..., "--out", help="Folder to write (ragexam, beir) or the qrels file "
                                                             "(trec).")]
Queries = Annotated[Optional[Path], typer.Option("--queries", help="With a qrels file as --qa: its queries (BEIR "
                                                                   "queries.jsonl, or id<TAB>text lines).")]
Chunkers = Annotated[Optional[List[str]], typer.Option("--chunker", "-c", help=chunker_help())]
Relevance = Annotated[Optional[str], typer.Option(
    "--relevance", help="evidence (a chunk counts when it contains an evidence string) or doc (a chunk counts for "
    "its document). Default: evidence when the questions have evidence.")]
Cutoffs = Annotated[Optional[List[str]], typer.Option("-k", "--k", help="Cutoffs: -k 1 -k 3 or -k 1,3,5 (chunks), "
                                                      "and context budgets: -k 2000c (characters), -k 512t (tokens): "
                                                      "every ranking metric also read until that much context is "
                                                      "spent. Default 1,3,5,10 (with several chunkers, also an equal "
                                                      "budget).")]
Depth = Annotated[Optional[int], typer.Option("--depth", help="Chunks retrieved per question (default 100).")]
MissK = Annotated[Optional[int], typer.Option("--miss-k", help="List a question as missed when no relevant unit is "
                                                               "in its top K (default 5).")]
BootSeed = Annotated[Optional[int], typer.Option("--seed", help="Seed of the bootstrap and randomization tests "
                                                                "(default 12345).")]
ConfigFile = Annotated[Optional[Path], typer.Option("--config", help="YAML or TOML file with the same settings; "
                                                                     "flags override it.")]
IgnorePunct = Annotated[Optional[bool], typer.Option("--ignore-punctuation/--keep-punctuation",
                                                     help="Ignore punctuation when matching evidence.")]
Overlap = Annotated[Optional[float], typer.Option("--overlap", help="Count a chunk holding at least this fraction "
                                                                    "(0-1] of an evidence string (default: all).")]
Resamples = Annotated[Optional[int], typer.Option("--n-resamples", help="Bootstrap resamples (default 2000).")]
Permutations = Annotated[Optional[int], typer.Option("--n-permutations", help="Randomization-test sign flips "
                                                                              "(default 10000).")]

# `run`/`demo` outputs
RunOut = Annotated[Optional[Path], typer.Option("--out", help="Write summary.json, per_question.csv, chunks.jsonl "
                                                              "and runs/ here.")]


# `bleu`/`chrf`
Refs = Annotated[Path, typer.Argument(help="FIRST: the references (the correct texts), one segment per line (UTF-8).")]
Hyps = Annotated[Path, typer.Argument(help="SECOND: the hypotheses (the system's outputs), one per line, parallel "
                                           "to REFS.")]
Lowercase = Annotated[bool, typer.Option("--lowercase", "-lc", help="Case-insensitive scoring.")]
