"""The one batch runner (dedupe, cache, resume, progress, usage, claims) and the dry-run planner."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading

import pytest

from ragexam.llm.batch import Outcome, PlannedCall, plan_calls, Store, run_calls
from ragexam.llm.cache import LLMCache
from ragexam.llm.cost import estimate_tokens
from ragexam.llm.transport import EndpointError


class Calls:
    """A call function that records what it was asked and can run a hook first."""

    def __init__(self, hooks=None, store=True):
        self.seen = []
        self.hooks = hooks or {}
        self.store = store
        self.lock = threading.Lock()

    def __call__(self, task):
        with self.lock:
            self.seen.append(task)
        if task in self.hooks:
            self.hooks[task]()
        return Outcome({"answer": f"A({task})"}, store=self.store(task) if callable(self.store) else self.store,
                       requests=2, replies=1, prompt_tokens=10 if task != "nousage" else None, completion_tokens=3)


def run(pairs, call, cache, **kw):
    kw.setdefault("poll", 0.02)
    return run_calls(pairs, call, store=Store(cache, "test", "m", "http://e/v1"), **kw)


def test_dedupe_cache_progress_and_usage(tmp_path):
    cache = LLMCache(tmp_path)
    calls = Calls(store=lambda t: t != "fail")
    pairs = [("k1", "a"), ("k2", "b"), ("k1", "a-again"), ("k3", "fail"), ("k4", "nousage")]
    ticks = []
    b = run(pairs, calls, cache, concurrency=2, progress=lambda d, t: ticks.append((d, t)))
    assert sorted(calls.seen) == ["a", "b", "fail", "nousage"]  # k1 once
    assert b.values["k1"] == {"answer": "A(a)"} and b.fresh == {"k1", "k2", "k3", "k4"}
    assert ticks[0] == (0, 4) and ticks[-1] == (4, 4) and len(ticks) == 5
    u = b.usage
    assert (u.calls, u.cached, u.requests, u.prompt_tokens, u.completion_tokens, u.usage_missing) == (4, 0, 8, 30, 12, 1)
    assert len(cache) == 3  # 'fail' is not stored
    assert cache.claims() == []  # every claim released
    calls2 = Calls()
    b2 = run(pairs, calls2, cache)
    assert calls2.seen == ["fail"] and b2.usage.cached == 4 and b2.usage.calls == 1  # k1 counted twice
    assert b2.from_cache == {"k1", "k2", "k4"}
    # usable=False for a stored value: called again
    calls3 = Calls()
    run(pairs[:1], calls3, cache, usable=lambda v: False)
    assert calls3.seen == ["a"]


def test_values_are_redacted_before_they_are_stored_and_returned(tmp_path):
    cache = LLMCache(tmp_path)
    b = run([("k", "t")], Calls(), cache, redact=lambda v: {"answer": v["answer"].replace("A", "*")})
    assert b.values["k"] == {"answer": "*(t)"} and cache.get("k") == {"answer": "*(t)"}


def test_an_endpoint_error_stops_the_run_keeps_finished_results_and_releases_claims(tmp_path):
    cache = LLMCache(tmp_path)

    def call(task):
        if task == "bad":
            raise EndpointError("HTTP 401")
        return Outcome({"v": task})

    with pytest.raises(EndpointError):
        run([("k1", "ok1"), ("k2", "bad"), ("k3", "ok3")], call, cache, concurrency=1)
    assert cache.get("k1") == {"v": "ok1"} and cache.get("k3") is None and cache.claims() == []


def test_without_cache_everything_is_called():
    calls = Calls()
    b = run([("k1", "a"), ("k2", "b"), ("k1", "a")], calls, None, concurrency=3)
    assert sorted(calls.seen) == ["a", "b"] and b.usage.cached == 0


def test_a_call_in_flight_elsewhere_is_waited_for_not_repeated(tmp_path):
    """Another owner (here: another cache handle in this process, so its owner is alive) holds k1;
    while this run makes k2, the other owner stores k1: this run reads it and never calls k1."""
    other = LLMCache(tmp_path)
    assert other.claim(["k1"], "other-owner").mine == ["k1"]
    calls = Calls(hooks={"b": lambda: other.put("k1", "test", "m", "e", {"answer": "theirs"}, owner="other-owner")})
    b = run([("k1", "a"), ("k2", "b")], calls, LLMCache(tmp_path), concurrency=2, claim_wait=600)
    assert calls.seen == ["b"]
    assert b.values["k1"] == {"answer": "theirs"} and "k1" in b.from_cache
    assert (b.usage.calls, b.usage.waited, b.usage.cached, b.usage.took_over) == (1, 1, 1, 0)
    assert other.claims() == []


def test_a_claim_released_without_result_is_made_here(tmp_path):
    other = LLMCache(tmp_path)
    other.claim(["k1"], "other-owner")
    calls = Calls(hooks={"b": lambda: other.release("other-owner", ["k1"])})  # their call failed
    b = run([("k1", "a"), ("k2", "b")], calls, LLMCache(tmp_path), concurrency=2, claim_wait=600)
    assert calls.seen == ["b", "a"] and (b.usage.calls, b.usage.waited, b.usage.took_over) == (2, 0, 1)


def test_a_claim_outliving_claim_wait_is_taken_over(tmp_path):
    other = LLMCache(tmp_path)
    other.claim(["k1"], "other-owner")  # never finishes
    calls = Calls()
    b = run([("k1", "a")], calls, LLMCache(tmp_path), claim_wait=0.1)
    assert calls.seen == ["a"] and b.usage.took_over == 1 and b.values["k1"] == {"answer": "A(a)"}


def test_a_dead_owners_claim_is_stale_at_once(tmp_path):
    """A process that claimed k1 and died (no release) does not make the next run wait."""
    code = ("import sys, os; sys.path[:0] = sys.argv[1:2]; from ragexam.llm.cache import LLMCache; "
            "c = LLMCache(sys.argv[2]); assert c.claim(['k1'], 'dead-owner').mine == ['k1']; os._exit(0)")
    import ragexam

    src = str(__import__("pathlib").Path(ragexam.__file__).parents[1])
    subprocess.run([sys.executable, "-c", code, src, str(tmp_path)], check=True, timeout=60)
    con = sqlite3.connect(str(tmp_path / "llm-cache.sqlite3"))
    assert con.execute("SELECT owner FROM claims").fetchall() == [("dead-owner",)]
    con.close()
    calls = Calls()
    b = run([("k1", "a")], calls, LLMCache(tmp_path), claim_wait=3600)
    assert calls.seen == ["a"] and (b.usage.waited, b.usage.took_over) == (0, 0)


def test_concurrency_is_checked():
    from ragexam.errors import InputError

    with pytest.raises(InputError, match="--concurrency"):
        run([("k", "t")], Calls(), None, concurrency=0)


def test_plan_counts_and_estimates(tmp_path):
    cache = LLMCache(tmp_path)
    cache.put("k1", "test", "m", "e", {"ok": True})
    cache.put("k2", "test", "m", "e", {"ok": False})
    calls = [PlannedCall("k1", "x" * 30, 10, "a"), PlannedCall("k2", "y" * 30, 10, "a"),
             PlannedCall("k3", "z" * 31, 10, "a"), PlannedCall("k3", "z" * 31, 10, "b"),
             PlannedCall(None, "", 0, "b"), PlannedCall("k4", "w" * 3, 7, "b")]
    p = plan_calls(calls, cache, usable=lambda v: v["ok"], price=(1.0, 2.0))
    assert (p.total, p.cached, p.shared, p.skipped, p.calls) == (6, 1, 1, 1, 3)
    assert p.est_prompt_tokens == 10 + estimate_tokens("z" * 31) + 1 == 22 and p.est_completion_tokens == 27
    assert p.est_cost == pytest.approx((22 * 1 + 27 * 2) / 1e6)
    assert p.by_group["a"] == {"total": 3, "cached": 1, "shared": 0, "skipped": 0, "calls": 2,
                               "est_prompt_tokens": 21, "est_completion_tokens": 20}
    assert p.by_group["b"]["shared"] == 1 and p.by_group["b"]["skipped"] == 1
    assert plan_calls(calls, None).calls == 4 and plan_calls(calls, None).est_cost == "unknown"
    assert cache.claims() == []  # a dry run claims nothing
