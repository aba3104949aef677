"""LLMSettings validation (one place, errors naming the option), endpoint/key precedence and .env."""

from __future__ import annotations

import math

import pytest

from test_judge_stub import API_KEY, start_stub

from ragexam.errors import InputError, speaking_to
from ragexam.llm.dotenv import lookup, read_dotenv
from ragexam.llm.settings import DEFAULT_BASE_URL, LLMSettings, resolve_endpoint


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    """No endpoint variables, and a current directory without .env."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("field, value, needle", [
    ("timeout", 0, "> 0"), ("timeout", -1.0, "> 0"), ("timeout", math.nan, "> 0"), ("timeout", math.inf, "> 0"),
    ("timeout", "60", "> 0"), ("max_retries", -1, ">= 0"), ("max_retries", 1.5, "integer"),
    ("max_retries", True, "integer"), ("concurrency", 0, ">= 1"), ("backoff", -0.1, ">= 0"),
    ("max_backoff", math.nan, ">= 0"), ("temperature", 2.5, "from 0 to 2"), ("max_tokens", 0, ">= 1"),
    ("seed", "7", "integer"), ("response_format", "xml", "json_schema"), ("price", (0.1,), "two numbers"),
    ("price", (-1, 2), "two numbers"), ("claim_wait", -5, ">= 0"), ("cache", "yes", "True or False"),
])
def test_every_numeric_setting_is_checked_and_the_error_names_the_option(field, value, needle):
    with pytest.raises(InputError) as ei:
        LLMSettings("m", **{field: value})
    err = ei.value
    assert err.field == field and err.source == "LLMSettings"  # in Python: the object; on the command line, the flag
    assert needle in str(err) and repr(value)[:10] in str(err)
    with speaking_to("cli"), pytest.raises(InputError) as ei:
        LLMSettings("m", **{field: value})
    assert ei.value.source == "--" + field.replace("_", "-")


def test_no_key_says_the_fix_in_the_readers_syntax(clean_env):
    with pytest.raises(InputError) as ei:
        LLMSettings("m").resolve()
    assert "LLMSettings(..., api_key=...)" in str(ei.value) and "--api-key" not in str(ei.value)
    with speaking_to("cli"), pytest.raises(InputError) as ei:
        LLMSettings("m").resolve()
    assert "pass --api-key" in str(ei.value) and ei.value.source == "--api-key"


def test_valid_settings_and_what_they_show():
    s = LLMSettings("m", base_url="http://u:pw@h:1/v1?k=1", api_key="sk-secret-123456", price=(1, 2))
    assert s.price == (1.0, 2.0) and s.claim_wait_seconds == 60.0 * 5
    assert "sk-secret" not in repr(s) and "api_key" not in s.to_dict()
    assert s.to_dict()["base_url"] == "http://h:1/v1" and "pw" not in str(s.to_dict())
    assert s.replace(timeout=5).timeout == 5
    with pytest.raises(InputError):
        s.replace(timeout=0)


def test_score_timeout_zero_is_refused_before_any_request(tmp_path, capsys, monkeypatch):
    """issue 9: ``score --timeout 0`` was accepted, then every call failed as connection_error."""
    from test_score_fixtures import write_case

    from ragexam.cli import main

    stub, shutdown = start_stub()
    try:
        qa, corpus, answers, run = write_case(tmp_path / "case")
        monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
        for option, value in (("--timeout", "0"), ("--concurrency", "0"), ("--max-retries", "-1"),
                              ("--temperature", "3")):
            with pytest.raises(SystemExit) as ei:
                main(["score", "--qa", str(qa), "--answers", str(answers), "--judge-model", "m", "--base-url",
                      stub.base_url, "--cache-dir", str(tmp_path / "c"), "--no-history", option, value])
            err = capsys.readouterr().err
            assert ei.value.code == 2 and option in err, err
        assert stub.requests == []
    finally:
        shutdown()


def test_base_url_must_be_an_http_url(clean_env, monkeypatch):
    for bad in ("localhost:11434/v1", "http://host:99999/v1", "http:///v1"):
        with pytest.raises(InputError, match="LLMSettings: field 'base_url'.*expected an http"):
            resolve_endpoint(bad)
        with speaking_to("cli"), pytest.raises(InputError, match="--base-url.*expected an http"):
            resolve_endpoint(bad)
    monkeypatch.setenv("OPENAI_BASE_URL", "ftp://example.org/v1")
    with pytest.raises(InputError, match="OPENAI_BASE_URL.*expected an http"):
        resolve_endpoint()


def test_precedence_argument_then_environment_then_dotenv(clean_env, monkeypatch):
    (clean_env / ".env").write_text("# for ragexam\nexport OPENAI_API_KEY='sk-from-dotenv-000'\n"
                                    "OPENAI_BASE_URL = \"http://dotenv.invalid:8000/v1\"  # local\n",
                                    encoding="utf-8")
    ep = resolve_endpoint()
    assert (ep.api_key, ep.base_url) == ("sk-from-dotenv-000", "http://dotenv.invalid:8000/v1")
    assert ep.api_key_source == ep.base_url_source == str(clean_env / ".env")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env-111")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://env.invalid/v1")
    ep = resolve_endpoint()
    assert (ep.api_key, ep.base_url, ep.api_key_source) == ("sk-from-env-111", "http://env.invalid/v1", "environment")
    ep = resolve_endpoint("http://arg.invalid/v1/", "sk-from-arg-222")
    assert (ep.api_key, ep.base_url, ep.api_key_source) == ("sk-from-arg-222", "http://arg.invalid/v1", "argument")
    monkeypatch.setenv("OPENAI_API_KEY", "")  # empty counts as unset
    assert resolve_endpoint().api_key == "sk-from-dotenv-000"
    assert "sk-from" not in repr(ep)


def test_keys_and_placeholders(clean_env):
    with pytest.raises(InputError, match="no API key.*OPENAI_API_KEY.*\\.env"):
        resolve_endpoint()
    ep = resolve_endpoint("http://127.0.0.1:9/v1")
    assert ep.api_key == "unused" and ep.api_key_source == "placeholder" and not ep.is_openai
    (clean_env / ".env").write_text("OPENAI_API_KEY=sk-only-in-dotenv-9\n", encoding="utf-8")
    ep = resolve_endpoint()
    assert ep.is_openai and ep.base_url == DEFAULT_BASE_URL and ep.api_key == "sk-only-in-dotenv-9"


def test_dotenv_format(tmp_path):
    p = tmp_path / ".env"
    p.write_text('\ufeffA=1\nB = two words # comment\nC="q \\"x\\" \\n y" # c\nD=\'lit \\n\'\n'
                 "not a setting line\nE=\nexport F=f#not-a-comment\nA=last\n", encoding="utf-8")
    assert read_dotenv(p) == {"A": "last", "B": "two words", "C": 'q "x" \n y', "D": "lit \\n", "E": "",
                              "F": "f#not-a-comment"}
    assert read_dotenv(tmp_path / "missing") == {}


def test_a_broken_line_for_our_name_names_file_and_line_but_not_the_value(tmp_path):
    p = tmp_path / ".env"
    p.write_text('OTHER="unterminated\nOPENAI_API_KEY="sk-secret-abcdef\n', encoding="utf-8")
    with pytest.raises(InputError) as ei:
        lookup("OPENAI_API_KEY", directory=tmp_path)
    msg = str(ei.value)
    assert f"{p}:2" in msg and "OPENAI_API_KEY" in msg and "sk-secret" not in msg
    p.write_text("OPENAI_API_KEY\n", encoding="utf-8")
    with pytest.raises(InputError, match=":1: field 'OPENAI_API_KEY'"):
        lookup("OPENAI_API_KEY", directory=tmp_path)


def test_the_401_hint_says_where_the_key_came_from(clean_env):
    """A key from ./.env that the endpoint refuses: the message says so (and not the key)."""
    from http.server import BaseHTTPRequestHandler

    from test_judge_stub import send_json, serve

    from ragexam.llm.client import LLMClient
    from ragexam.llm.transport import EndpointError

    class H(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            send_json(self, 401, {"error": {"message": "Incorrect API key " + self.headers["Authorization"]}})

    address, shutdown = serve(H)
    try:
        (clean_env / ".env").write_text("OPENAI_API_KEY=sk-wrong-key-in-dotenv\n", encoding="utf-8")
        client = LLMClient("m", base_url=address + "/v1")
        with pytest.raises(EndpointError) as ei:
            client.complete([{"role": "user", "content": "hi"}])
        msg = str(ei.value)
        assert "HTTP 401" in msg and str(clean_env / ".env") in msg and "sk-wrong" not in msg
        assert "Bearer [redacted]" in msg and client.requests == 1
    finally:
        shutdown()


def test_one_settings_object_drives_the_judge(tmp_path):
    from ragexam.llm.client import LLMClient
    from ragexam.metrics.judge import Judge, JudgeItem

    stub, shutdown = start_stub()
    try:
        s = LLMSettings("stub-judge", base_url=stub.base_url, api_key=API_KEY, max_tokens=77, seed=5,
                        temperature=0.25, concurrency=2, cache_dir=tmp_path / "c", response_format="json_object")
        judge = Judge(settings=s, max_attempts=2)
        run = judge.run([JudgeItem("q", "질문", "답", ("문맥",), "정답")], ["answer_correctness"])
        body = stub.requests[0]
        assert (body["max_tokens"], body["seed"], body["temperature"], body["response_format"]["type"]) == (
            77, 5, 0.25, "json_object")
        assert run.judgments[0].judged and judge.concurrency == 2 and judge.cache.count("judge") == 1
        assert "max_tokens:77|seed:5|repeat:1|attempts:2|format:json_object" in run.signatures["answer_correctness"]
        assert LLMClient(s).settings is s and s.open_cache().directory == tmp_path / "c"
        assert s.replace(cache=False).open_cache() is None
        assert Judge("other-model", settings=s).model == "other-model"
    finally:
        shutdown()


def test_a_model_name_that_cannot_be_signed_is_refused_before_any_call():
    from ragexam.metrics.judge import Judge

    with pytest.raises(InputError, match="--judge-model.*'a|b'.*contains '|'"):
        Judge("a|b", base_url="http://127.0.0.1:9/v1")
