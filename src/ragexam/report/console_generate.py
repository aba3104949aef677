"""Console rendering of ``ragexam generate`` (the set's card, the dry run) and ``ragexam review apply``.

Only renders: every number comes from the result objects of :mod:`ragexam.questions`, formatted
with :mod:`ragexam.fmt`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, Mapping, Tuple, Union

from ragexam import fmt

if TYPE_CHECKING:
    from rich.console import Console

    from ragexam.questions.output import GenerateResult
    from ragexam.questions.products import GeneratePlan
    from ragexam.questions.review import ReviewResult

__all__ = ["print_generate", "print_generate_plan", "print_review"]


def _usage_line(usage: Mapping[str, Mapping[str, Any]], cost: Union[float, str]) -> str:
    parts = []
    for what, u in usage.items():
        parts.append(f"{what}: {fmt.plural(u.get('calls', 0), 'call')} ({u.get('cached', 0)} cached, "
                     f"{fmt.plural(u.get('requests', 0), 'HTTP request')}), {u.get('prompt_tokens', 0)} prompt + "
                     f"{u.get('completion_tokens', 0)} completion tokens")
    return "; ".join(parts) + f"; cost: {fmt.cost(cost)}" if parts else f"no call made; cost: {fmt.cost(cost)}"


def print_generate(result: GenerateResult, console: Console) -> None:
    """The set's card as tables: mix target vs achieved, rejections by reason, coverage, usage, signature, and the
    files written (``result.written``)."""
    from rich.markup import escape
    from rich.table import Table

    card: Dict[str, Any] = result.card
    t = Table(title=f"question set: {fmt.plural(card['n_kept'], 'question')} of {card['n_requested']} asked for")
    for col in ("type", "target", "achieved"):
        t.add_column(col, justify="left" if col == "type" else "right")
    for kind, m in card["mix"].items():
        short = m["achieved"] < m["target"]
        t.add_row(escape(kind), str(m["target"]), f"[yellow]{m['achieved']}[/]" if short else str(m["achieved"]))
    console.print(t)
    if card["rejections"]:
        calls = sum(n for k, n in card["rejections"].items() if k in ("call_failed", "malformed_reply", "no_questions"))
        cands = sum(card["rejections"].values()) - calls
        title = f"rejected: {cands} of {fmt.plural(card['candidates'], 'candidate')}"
        if calls:
            title += f" and {fmt.plural(calls, 'call')} that gave no question"
        r = Table(title=title + " (every one in the rejects file)")
        for col in ("reason", "count", "meaning"):
            r.add_column(col, justify="right" if col == "count" else "left", overflow="fold")
        for reason, n in card["rejections"].items():
            r.add_row(reason, str(n), escape(card["rejection_meanings"].get(reason, "")))
        console.print(r)
    cov = card["coverage"]
    console.print(f"coverage: questions from {cov['documents_with_questions']} of "
                  f"{fmt.plural(cov['documents'], 'document')}; {cov['sections_prompted']} of "
                  f"{fmt.plural(cov['sections'], 'section')} shown to the model (at most {cov['section_uses_max']} "
                  f"{fmt.noun(cov['section_uses_max'], 'time')} each)", highlight=False, soft_wrap=True)
    console.print(f"{fmt.plural(card['passes'], 'pass', 'passes')}; stopped: {card['stopped']}", highlight=False,
                  markup=False, soft_wrap=True)
    if "checks" in card:
        unwrapped = f"; {fmt.plural(card['unwrapped'], 'question')} kept with evidence unwrapped from a quote frame" \
            if card.get("unwrapped") else ""
        how = {"focus": "evidence: the sentence ragexam chose (focus)", "spans": "evidence cited as spans",
               "sentences": "evidence cited as sentences"}.get(card["cite"], f"evidence cited as {card['cite']}")
        console.print(f"checks: {', '.join(card['checks']) or 'none'}; {how}{unwrapped}",
                      highlight=False, markup=False, soft_wrap=True)
    _who_checked(card, console)
    _yield_line(card, console)
    for note in card.get("notes", []):
        console.print(f"note: {note}", highlight=False, markup=False, soft_wrap=True)
    console.print(_usage_line(card["this_run"]["usage"], card["this_run"]["cost_usd"]), highlight=False,
                  markup=False, soft_wrap=True)
    console.print(f"signature: {card['signature']}", style="dim", highlight=False, markup=False, soft_wrap=True)
    _files_lines(result, console)
    if result.shortfall:
        failed = set(card["rejections"]) == {"call_failed"} and not card["n_kept"]
        fix = ("every generation call failed (the rejects file holds each error): check --base-url, --model and "
               "the key, then run again" if failed else "see the rejections above; raise --max-passes, --max-calls, "
               "--max-generation-calls or --budget, or change the mix")
        console.print(f"[yellow]{fmt.plural(result.shortfall, 'question')} short of {card['n_requested']}[/]: "
                      f"{fix}.", highlight=False, soft_wrap=True)


def _files_lines(result: GenerateResult, console: Console) -> None:
    """The files written and the set's audit status; when no question was kept, that only the rejects were."""
    paths = result.written
    if "qa" in paths:
        from ragexam.questions.audit import audit_status

        console.print(f"audit: {audit_status(paths['qa']).text()} -- the checks say what passed, not what is right; "
                      f"a person's reading of a random sample gives the junk rate: `ragexam review audit {paths['qa']}`"
                      , highlight=False, markup=False, soft_wrap=True)
        console.print(f"Wrote {paths['qa']} (the set), {paths['rejects']}, {paths['card']} and {paths['review']} "
                      "(review it, then `ragexam review apply`).", highlight=False, markup=False, soft_wrap=True)
    elif paths:
        console.print(f"No question was kept, so no set, card or review sheet was written; wrote {paths['rejects']} "
                      "(why each call or candidate gave none).", highlight=False, markup=False, soft_wrap=True)


def _who_checked(card: Mapping[str, Any], console: Console) -> None:
    """Who made the LLM checks; a warning when the generator checked itself (no second opinion)."""
    who = card.get("checked_by")
    if not isinstance(who, Mapping):
        return
    if who.get("generator_itself"):
        from rich.markup import escape

        console.print(f"[yellow]{escape(str(who['text']))}[/] (생성 모델이 스스로 검사): its critic and reader are no second "
                      "opinion on its own questions; --judge-model names another model.", highlight=False,
                      soft_wrap=True)
    else:
        console.print(str(who["text"]), highlight=False, markup=False, soft_wrap=True)


def _yield_line(card: Mapping[str, Any], console: Console) -> None:
    """"N kept in M generation calls (K made by this run; the limit)"; nothing when no call was planned."""
    calls = card.get("generation_calls")
    if not calls:
        return
    made = card["this_run"]["usage"].get("generation", {}).get("calls", 0)
    limit = card.get("limits", {}).get("max_generation_calls")
    console.print(f"{card['n_kept']} kept in {fmt.plural(calls, 'generation call')} ({made} made by this run"
                  + (f"; --max-generation-calls {limit}" if limit is not None else "") + ")",
                  highlight=False, markup=False, soft_wrap=True)


def print_generate_plan(plan: GeneratePlan, console: Console) -> None:
    """The dry run in words: the models, who checks, the prompts it will use, the targets, the next pass."""
    d = plan.to_dict()
    head = (f"generate dry run: {d['model']} at {d['endpoint']}; questions in {d['language']}, prompts: "
            f"{d['prompts']} ({d['cite']}); {d['checked_by']}; targets "
            + ", ".join(f"{k} {v}" for k, v in d["targets"].items()) + ".")
    console.print(head, highlight=False, markup=False, soft_wrap=True)
    if d.get("max_generation_calls") is not None:
        console.print(f"at most {fmt.plural(d['max_generation_calls'], 'generation call')} (--max-generation-calls).",
                      highlight=False, markup=False, soft_wrap=True)
    for note in d.get("notes") or []:
        console.print(f"note: {note}", highlight=False, markup=False, soft_wrap=True)
    if d["next_pass"] is None:
        console.print(f"{d['note']} ({fmt.plural(d['cached_passes'], 'cached pass', 'cached passes')}, "
                      f"{fmt.plural(d['kept_so_far'], 'question')} kept). Nothing was sent.", highlight=False,
                      markup=False, soft_wrap=True)
        return
    checks = f"{d['check_calls']}" if d["check_calls_exact"] else f"up to {d['check_calls']}"
    console.print(f"pass {d['next_pass']}: {fmt.plural(d['generation_calls'], 'generation call')} to make "
                  f"({d['generation_cached']} cached), {checks} LLM {fmt.noun(d['check_calls'], 'check')}; estimated "
                  f"tokens: {d['est_prompt_tokens']} prompt + {d['est_completion_tokens']} completion "
                  f"({d['token_rule']}); estimated cost: {fmt.cost(d['est_cost_usd'])}. Nothing was sent.",
                  highlight=False, markup=False, soft_wrap=True)
    console.print(d["note"], highlight=False, markup=False, soft_wrap=True)


def _parts(*counted: Tuple[int, str], sep: str = ", ", end: str = "") -> str:
    """``3 accepted, 2 pending kept``: each count with its words, a count of 0 left out ("" when all are 0)."""
    shown = [f"{n} {words}" for n, words in counted if n]
    return sep.join(shown) + end if shown else ""


def print_review(result: ReviewResult, console: Console, out: Union[str, Path]) -> None:
    """What ``review apply`` did (or why it wrote nothing: ``--max-junk``), with the set's audit."""
    from ragexam.report.console_audit import audit_lines

    c = result.counts
    for line in audit_lines(result.audit, result.bound, out):
        console.print(line, highlight=False, markup=False, soft_wrap=True)
    if result.refused:
        console.print(result.refused, style="red", highlight=False, markup=False, soft_wrap=True)
        return
    done = "; ".join(x for x in (
        _parts((c["accepted"], "accepted"), (c["pending_kept"], "pending kept")),
        _parts((c["rejected"], "rejected"), (c["pending_dropped"], "pending"), sep=" and ", end=" left out"),
        _parts((c["edited"], "edited and checked again"))) if x)
    console.print(f"Wrote {fmt.plural(len(result.records), 'question')} to {out}" + (f": {done}." if done else "."),
                  highlight=False, markup=False, soft_wrap=True)
    if result.kind == "located":  # what the review did to the evidence ragexam located
        chosen = _parts((c["proposed"], "the proposed span"), (c["runner_up"], "the runner-up"))
        evidence = _parts((c["accepted"], "accepted by a person" + (f" ({chosen})" if chosen else "")),
                          (c["pending_kept"], "pending: kept as ragexam located it"))
        if evidence:
            console.print(f"evidence: {evidence}", highlight=False, markup=False, soft_wrap=True)
    for note in result.notes:
        console.print(f"note: {note}", highlight=False, markup=False, soft_wrap=True)
