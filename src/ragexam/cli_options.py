"""The command line's option groups, declared once, and the small helpers every command shares.

:mod:`ragexam.cli` builds its commands from the annotated option types here: an option used by several
commands (the LLM endpoint, the outputs, the history, the run settings) has one name, one default and one help
text.  :func:`llm_settings` turns the LLM endpoint group into one validated
:class:`~ragexam.llm.settings.LLMSettings`.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import typer

from ragexam.data.chunking import chunker_help
from ragexam.errors import InputError
from ragexam.types import JsonValue

if TYPE_CHECKING:
    from rich.console import Console

    from ragexam.metrics.judge import JudgePlan

#: help texts owned by a module the CLI does not import at start (the ranking metrics import numpy): filled in when
#: their command is invoked, so ``ragexam --help`` stays fast; ``{(command, option): "module:function"}``
_LATE_HELP: Dict[Tuple[str, str], str] = {}


def late_help(command: Union[str, Sequence[str]], option: str, owner: str) -> str:
    """Register ``owner`` (``"module:function"``, returning the help text) as the help of ``--option`` of
    ``command`` (or of each of several commands), filled in when the command is invoked -- so the help lists what
    the registries hold then, and starting the CLI imports none of them; returns the text shown until then."""
    commands = [command] if isinstance(command, str) else list(command)
    for c in commands:
        _LATE_HELP[(c, option)] = owner
    return f"See `ragexam {commands[0]} --help`."


def max_tokens_help(command: Optional[str]) -> str:
    """The help of ``--max-tokens`` for ``command``, its default read from the constant the command uses (imported
    when the command runs, so starting the CLI imports none of them)."""
    head = "Completion limit per reply"
    if command == "generate":
        from ragexam.questions.config import DEFAULT_MAX_TOKENS, FOCUS_MAX_TOKENS

        return (f"{head} (default: {FOCUS_MAX_TOKENS} with --cite focus, the default; {DEFAULT_MAX_TOKENS} with "
                "--cite spans or sentences).")
    if command == "answer":
        from ragexam.api import ANSWER_MAX_TOKENS

        return f"{head} (default: {ANSWER_MAX_TOKENS})."
    if command in ("score", "pairwise", "judge-agreement", "judge-check"):
        from ragexam.metrics.judge.core import Judge

        return f"{head} (default: {Judge.DEFAULT_MAX_TOKENS} for the judge)."
    if command == "locate-evidence":
        from ragexam.questions.locate_llm import _MAX_TOKENS

        return f"Not used here: each confirmation asks for at most {_MAX_TOKENS} tokens."
    if command == "llm probe":
        from ragexam.llm.probe import MAX_TOKENS as PROBE_MAX_TOKENS

        return f"Not used here: each probe asks for at most {PROBE_MAX_TOKENS} tokens."
    return f"{head} (the default is the command's: see its --help)."


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
        subcommands = [(f"{name} {sub}", c) for sub, c in (getattr(cmd, "commands", None) or {}).items()]
        for label, command in [(name, cmd), *subcommands]:
            for p in getattr(command, "params", ()):
                if p.name == "max_tokens":
                    p.help = max_tokens_help(label)
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


def print_json(obj: JsonValue) -> None:
    import json

    sys.stdout.write(json.dumps(obj, ensure_ascii=False, indent=2, allow_nan=False) + "\n")


def commas(values: Optional[List[str]], option: str) -> Optional[List[str]]:
    """Repeated and comma-separated values of ``option`` as one list (``None`` when none were given); a value that
    holds no name (``-c ""``, ``-m ,``) is an error, never the default."""
    out = [p.strip() for v in values or () for p in v.split(",") if p.strip()]
    if values and not out:
        raise InputError(f"received {', '.join(map(repr, values))}; expected one or more names (comma-separated). "
                         f"Fix: name them, or leave {option} out for the default.", source=option,
                         field=option.lstrip("-"))
    return out or None


def progress(label: str, tty: bool = True):
    """A progress callback: on a terminal (unless ``tty`` is false, e.g. with --json) a counter redrawn on stderr;
    otherwise the command's progress lines (:mod:`ragexam.exec.progress`, ``None`` when it has none)."""
    if not sys.stderr.isatty():
        from ragexam.exec.progress import callback

        return callback(label)
    if not tty:
        return None
    state = {"last": -1}

    def cb(done: int, total: int) -> None:
        if total and (done == total or done - state["last"] >= max(1, total // 20)):
            state["last"] = done
            sys.stderr.write(f"\r{label} {done}/{total}" + ("\n" if done == total else ""))
            sys.stderr.flush()

    return cb


def show(json_out: bool, data: Callable[[], JsonValue], table: Callable[["Console"], None], *,
         plan: Optional["JudgePlan"] = None) -> None:
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
# --- the LLM option group: declared once; a command that calls a model takes it with @llm_options --------------
BaseUrl = Annotated[Optional[str], typer.Option("--base-url", help="Endpoint root, e.g. http://localhost:11434/v1 "
                                                                   "(default $OPENAI_BASE_URL, then .env, else OpenAI).")]
ApiKey = Annotated[Optional[str], typer.Option("--api-key", help="API key (default $OPENAI_API_KEY, then .env; "
                                                                 "prefer those: arguments show in process lists).")]
Concurrency = Annotated[int, typer.Option("--concurrency", help="Calls in flight at once.")]
Temperature = Annotated[float, typer.Option("--temperature", help="Sampling temperature.")]
MaxTokens = Annotated[Optional[int], typer.Option("--max-tokens", help="Completion limit per reply (the default "
                                                                       "is the command's: see its --help).")]
LlmSeed = Annotated[Optional[int], typer.Option("--seed", help="Seed passed to the endpoint (if it honours one).")]
Timeout = Annotated[float, typer.Option("--timeout", help="Seconds per HTTP request.")]
MaxRetries = Annotated[int, typer.Option("--max-retries", help="Retries on 429/5xx/timeouts per request.")]
ResponseFormat = Annotated[str, typer.Option("--response-format", help="auto, json_schema, json_object or none.")]
CacheDir = Annotated[Optional[Path], typer.Option("--cache-dir", help="LLM cache directory (default "
                                                                      "$RAGEXAM_CACHE_DIR, else "
                                                                      "$XDG_CACHE_HOME/ragexam, else "
                                                                      "~/.cache/ragexam).")]
NoCache = Annotated[bool, typer.Option("--no-cache", help="Do not read or write the LLM cache.")]
Price = Annotated[Optional[str], typer.Option("--price", help="USD per 1M tokens as IN,OUT (overrides the table).")]
DryRun = Annotated[bool, typer.Option("--dry-run", help="Print the calls and estimated tokens and cost; send "
                                                        "nothing.")]
MaxAttempts = Annotated[int, typer.Option("--max-attempts", help="Replies per judgment before it is unjudged.")]
JudgeLang = Annotated[str, typer.Option("--judge-lang", help="Prompt language: auto (Hangul share), ko, en.")]
RetryUnjudged = Annotated[bool, typer.Option("--retry-unjudged", help="Re-judge cached unjudged results.")]
NoReasoning = Annotated[bool, typer.Option("--no-reasoning", help="Ask the judge for its scores only (an empty "
                                           "reasoning): the same scores, written first, at a fraction of the tokens "
                                           "-- for slow local models.")]
JudgeQuoted = Annotated[bool, typer.Option("--judge-quoted", help="Let the judge decide claims and statements that "
                                           "a context states in the same words too (by default they are supported "
                                           "without its say: same content words in order, same negations).")]
Scoring = Annotated[str, typer.Option("--scoring", help="How the judge reads a score: sample (the written one), "
                                      "probability (expected value over the score tokens' probabilities; P(yes) for "
                                      "yes/no), auto (probability when the endpoint returns logprobs, asked once: "
                                      "`ragexam llm probe`).")]

#: name -> (option, default) of the endpoint part of the group (every command that calls a model)
_ENDPOINT: Dict[str, Tuple[Any, Any]] = {
    "base_url": (BaseUrl, None), "api_key": (ApiKey, None), "concurrency": (Concurrency, 4),
    "temperature": (Temperature, 0.0), "max_tokens": (MaxTokens, None), "seed": (LlmSeed, None),
    "timeout": (Timeout, 60.0), "max_retries": (MaxRetries, 4), "cache_dir": (CacheDir, None),
    "no_cache": (NoCache, False), "price": (Price, None)}
#: the judge part (commands whose model is a judge)
_JUDGE: Dict[str, Tuple[Any, Any]] = {
    "response_format": (ResponseFormat, "auto"), "max_attempts": (MaxAttempts, 3), "judge_lang": (JudgeLang, "auto"),
    "retry_unjudged": (RetryUnjudged, False), "no_reasoning": (NoReasoning, False),
    "judge_quoted": (JudgeQuoted, False)}


@dataclass
class LLMOptions:
    """The LLM option group as a command received it: :meth:`settings` is the one validated
    :class:`~ragexam.llm.settings.LLMSettings`, :meth:`judge` the judge's own options."""

    model: Optional[str]
    values: Dict[str, Any]

    def settings(self):
        """The :class:`~ragexam.llm.settings.LLMSettings` (``None`` without a model: no LLM asked for)."""
        if self.model is None:
            return None
        v = self.values
        return llm_settings(self.model, v["base_url"], v["api_key"], concurrency=v["concurrency"],
                            temperature=v["temperature"], max_tokens=v["max_tokens"], seed=v["seed"],
                            timeout=v["timeout"], max_retries=v["max_retries"], cache_dir=v["cache_dir"],
                            no_cache=v["no_cache"], price=v["price"],
                            **{k: v[k] for k in ("response_format", "scoring") if k in v},
                            **({"reasoning": not v["no_reasoning"]} if "no_reasoning" in v else {}),
                            **({"quoted": not v["judge_quoted"]} if "judge_quoted" in v else {}))

    def judge(self) -> Dict[str, Any]:
        """``max_attempts``, ``judge_lang`` and ``retry_unjudged`` as a judge's api function takes them."""
        return {k: self.values[k] for k in ("max_attempts", "judge_lang", "retry_unjudged") if k in self.values}


def llm_options(*, model: str = "--judge-model", model_help: str = "Judge model on an OpenAI-compatible endpoint.",
                required: bool = True, judge: bool = True, scoring: bool = True) -> Callable[[Callable], Callable]:
    """Give a command the LLM option group, declared once here: the model option ``model`` (``required`` or not),
    the endpoint and call options and, with ``judge``, the judge's (``--response-format``, ``--max-attempts``,
    ``--judge-lang``, ``--retry-unjudged``, and with ``scoring`` ``--scoring``).  The command receives them as
    one :class:`LLMOptions` in its parameter ``llm``."""
    import functools
    import inspect

    group = dict(_ENDPOINT)
    if judge:
        group.update(_JUDGE)
        if scoring:
            group["scoring"] = (Scoring, "auto")
    model_option = Annotated[str if required else Optional[str], typer.Option(model, help=model_help)]

    def deco(fn: Callable) -> Callable:
        sig = inspect.signature(fn, eval_str=True)  # the command module's annotations, resolved there
        params = [p for p in sig.parameters.values() if p.name != "llm"]
        params.append(inspect.Parameter("llm_model", inspect.Parameter.KEYWORD_ONLY, annotation=model_option,
                                        default=inspect.Parameter.empty if required else None))
        params += [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=ann, default=default)
                   for name, (ann, default) in group.items()]

        @functools.wraps(fn)
        def wrapper(**kwargs: object) -> None:
            values = {name: kwargs.pop(name) for name in group}
            kwargs["llm"] = LLMOptions(kwargs.pop("llm_model"), values)
            return fn(**kwargs)

        wrapper.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
        return wrapper

    return deco


def llm_settings(model: str, base_url, api_key, *, concurrency, temperature, max_tokens, seed, timeout, max_retries,
                 cache_dir, no_cache, price, response_format: str = "auto", scoring: str = "auto",
                 reasoning: bool = True, quoted: bool = True):
    """The endpoint option group as one validated :class:`~ragexam.llm.settings.LLMSettings`."""
    from ragexam.llm.cost import parse_price
    from ragexam.llm.settings import LLMSettings

    return LLMSettings(model, base_url=base_url, api_key=api_key, timeout=timeout, max_retries=max_retries,
                       concurrency=concurrency, cache=not no_cache, cache_dir=cache_dir, price=parse_price(price),
                       temperature=temperature, max_tokens=max_tokens, seed=seed, response_format=response_format,
                       scoring=scoring, reasoning=reasoning, quoted=quoted)


# `run` (and the commands that grade retrieval like it)
QaOpt = Annotated[Optional[str], typer.Option("--qa", help="Question set (JSONL), a BEIR folder or a bundled name.")]
Retrievers = Annotated[Optional[List[str]], typer.Option(
    "--retriever", "-r", help=late_help(("run", "grade"), "retriever", "ragexam.retrieval.registry:retriever_help"))]
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
