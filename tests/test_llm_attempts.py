"""ragexam.llm.attempts.ask: the one "parse or ask again with feedback" loop (judge and question generator)."""

from __future__ import annotations

import json

import pytest

from ragexam.llm.attempts import TEXT_REFUSAL, Reading, ask
from ragexam.llm.client import ChatReply
from ragexam.llm.transport import CallFailed


class Bad(Exception):
    def __init__(self, kind, message):
        super().__init__(message)
        self.kind, self.message = kind, message


class Stop(Exception):
    pass


class Script:
    """A client whose replies are scripted: ChatReply fields, or a CallFailed to raise."""

    def __init__(self, *replies):
        self.replies = list(replies)
        self.calls = []

    def complete(self, messages, **kw):
        self.calls.append((messages, kw))
        r = self.replies.pop(0)
        if isinstance(r, CallFailed):
            raise r
        content, finish, refusal = r
        return ChatReply(content, refusal, finish, 10, 2, 1, "json_schema")


def parse(content):
    try:
        obj = json.loads(content or "")
    except ValueError:
        raise Bad("invalid_json", "not JSON") from None
    if obj.get("stop"):
        raise Stop()
    if "ok" not in obj:
        raise Bad("invalid_reply", "no ok")
    return obj["ok"]


def run(client, loop_kind="truncated", **kw):
    reading = Reading(parse, (Bad,), lambda kind, msg: f"[{kind}] {msg}", final=(Stop,), refusal=TEXT_REFUSAL,
                      loop_kind=loop_kind)
    return ask(client, [{"role": "user", "content": "q"}], reading, max_attempts=kw.pop("max_attempts", 3),
               max_tokens=kw.pop("max_tokens", 100), **kw)


def test_a_good_reply_is_parsed_at_once():
    c = Script(('{"ok": 5}', "stop", None))
    got = run(c)
    assert (got.parsed, got.value, got.attempts, got.requests, got.prompt_tokens, got.errors) == (True, 5, 1, 1, 10, [])


def test_problems_are_fed_back_and_the_length_limit_doubles_up_to_four_times():
    c = Script(("{", "length", None), ("{", "length", None), ("{", "length", None), ('{"x": 1}', "stop", None))
    got = run(c, max_attempts=4)
    assert [kw["max_tokens"] for _, kw in c.calls] == [100, 200, 400, 400]
    assert not got.parsed and got.reason == "invalid_reply" and got.attempts == 4
    assert [e["reason"] for e in got.errors] == ["truncated", "truncated", "truncated", "invalid_reply"]
    last = c.calls[-1][0]
    assert [m["role"] for m in last] == ["user"] + ["assistant", "user"] * 3
    assert last[2]["content"].startswith("[truncated]") and got.completion_tokens == 8


def test_refusals_in_the_field_and_in_words():
    c = Script((None, "stop", "I can't"), ("I'm sorry, I can't help.", "stop", None), ('{"ok": 1}', "stop", None))
    got = run(c)
    assert got.parsed and [e["reason"] for e in got.errors] == ["refused", "refused"]
    assert c.calls[1][0][-1]["content"].startswith("[refused]") and c.calls[1][0][-2]["content"] == "I can't"


def test_a_final_exception_and_a_transport_failure_end_the_attempts():
    got = run(Script(("nope", "stop", None), ('{"stop": true}', "stop", None)))
    assert isinstance(got.final, Stop) and got.attempts == 2 and not got.parsed
    boom = CallFailed("server_error", "HTTP 500", 5, 500)
    got = run(Script(("nope", "stop", None), boom))
    assert got.failed is boom and got.attempts == 1 and got.requests == 6 and got.errors[0]["reason"] == "invalid_json"


@pytest.mark.parametrize("text", ["I'm sorry, I can't do that", "죄송하지만 평가할 수 없습니다", "As an AI model"])
def test_text_refusals(text):
    assert TEXT_REFUSAL.match(text)
