"""Issue 39's tracebacks in the LLM layer, each reproduced against a fake on 127.0.0.1 and kept fixed:

1. ``ragexam llm probe`` against nothing listening, an HTTP 500 and an HTML page: a message naming the endpoint,
   what went wrong and the fix, exit 2 -- no traceback.
2. A log-probability of 1000 on a token (``judge-check --scoring probability``, ``score`` with ``--scoring auto``):
   no ``OverflowError``; with ``probability`` the judgment is unjudged ``no_probabilities`` with a reason naming
   the value, with ``auto`` the written score is kept and a note says so.
3. A log-probability of ``Infinity``: nothing crashes when the judgment is stored.

One numeric guard reads every log-probability (:func:`ragexam.llm.logprobs.logprob_value`).
"""

from __future__ import annotations

import json
import math

import pytest

from ragexam.cli import main
from ragexam.testing.stub import StubEndpoint


class _OddLogprobs(StubEndpoint):
    """The stub whose replies carry ``value`` as the log-probability of the sampled digit or ``true``/``false``
    (from the ``after``-th reply on), and of its first alternative (an endpoint that lost its mind)."""

    def __init__(self, value, *, after: int = 1):
        super().__init__()
        self.value, self.after, self.n = value, after, 0

    def _chat(self, body):
        out = super()._chat(body)
        self.n += 1
        lp = (out["choices"][0].get("logprobs") or {}).get("content")
        if lp and self.n > self.after:
            for entry in lp:
                if entry["token"].isdigit() or entry["token"] in ("true", "false"):
                    entry["logprob"] = self.value
                    entry["top_logprobs"][0]["logprob"] = self.value
        return out


def _raw(endpoint_value):
    """JSON text of a value as an endpoint may write it (``Infinity`` is not JSON, Python writes it anyway)."""
    return json.dumps(endpoint_value)


# --- 1. llm probe against a failing endpoint --------------------------------------------------------------
def _probe(base_url, tmp_path, capsys):
    with pytest.raises(SystemExit) as ei:
        main(["llm", "probe", "--model", "m", "--base-url", base_url, "--max-retries", "0", "--api-key", "x",
              "--cache-dir", str(tmp_path / "c")])
    cap = capsys.readouterr()
    return ei.value.code, cap.err + cap.out


def test_probe_with_nothing_listening_says_so(tmp_path, capsys):
    code, text = _probe("http://127.0.0.1:1/v1", tmp_path, capsys)
    assert code == 2 and "Traceback" not in text
    assert "could not ask http://127.0.0.1:1/v1" in text and "connection" in text
    assert "--base-url" in text and "server" in text  # the fix: start the server or correct the URL


def test_probe_of_a_failing_server_and_of_an_html_page(tmp_path, capsys):
    from json_stub import json_server

    def handle(path, body, headers):
        if body["model"] == "five-hundred":
            return 500, {"error": {"message": "CUDA out of memory"}}
        return 200, b"<html><body>Welcome to nginx!</body></html>"

    base, shutdown = json_server(handle)
    try:
        with pytest.raises(SystemExit) as ei:
            main(["llm", "probe", "--model", "five-hundred", "--base-url", base + "/v1", "--max-retries", "0",
                  "--api-key", "x", "--cache-dir", str(tmp_path / "c")])
        err = capsys.readouterr().err
        assert ei.value.code == 2 and "HTTP 500" in err and "CUDA out of memory" in err and "retry" in err
        with pytest.raises(SystemExit) as ei:
            main(["llm", "probe", "--model", "html", "--base-url", base + "/v1", "--max-retries", "0",
                  "--api-key", "x", "--cache-dir", str(tmp_path / "c")])
        err = capsys.readouterr().err
        assert ei.value.code == 2 and "not JSON" in err and "OpenAI-compatible" in err and "/v1" in err
    finally:
        shutdown()


# --- 2. and 3. log-probabilities out of range -------------------------------------------------------------
def test_the_numeric_guard_of_a_log_probability():
    from ragexam.llm.logprobs import UnreadableLogprobs, logprob_value, parse_logprobs

    assert logprob_value(-0.5) == -0.5 and logprob_value(0) == 0.0 and logprob_value(-1e300) == -1e300
    assert logprob_value(1e-9) == 0.0  # a rounding above 0 is 0
    assert logprob_value(-math.inf) == -math.inf  # log 0: probability 0 is a probability
    for bad in (1000, 0.5, math.inf, math.nan, "x", None, True):
        assert logprob_value(bad) is None
    choice = {"logprobs": {"content": [{"token": "5", "logprob": 1000, "top_logprobs": []}]}}
    with pytest.raises(UnreadableLogprobs) as ei:
        parse_logprobs(choice)
    assert "1000" in str(ei.value) and "at most 0" in str(ei.value)
    alt = {"logprobs": {"content": [{"token": "5", "logprob": -0.1,
                                     "top_logprobs": [{"token": "4", "logprob": math.inf}]}]}}
    with pytest.raises(UnreadableLogprobs):
        parse_logprobs(alt)
    minus_inf = {"logprobs": {"content": [{"token": "5", "logprob": -0.1,
                                           "top_logprobs": [{"token": "4", "logprob": -math.inf}]}]}}
    (tok,) = parse_logprobs(minus_inf)
    assert tok.top == ((b"4", -math.inf),)


@pytest.mark.parametrize("value", [1000, math.inf])
def test_judge_check_with_probability_scoring_keeps_the_judgment_unjudged(value, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    out = tmp_path / "check.json"
    with _OddLogprobs(value) as ep:
        with pytest.raises(SystemExit) as ei:
            main(["judge-check", "--qa", "it_helpdesk", "--corpus", "it_helpdesk", "--judge-model", "m",
                  "--base-url", ep.base_url, "--cache-dir", str(tmp_path / "c"), "--limit", "4",
                  "-m", "context_relevance", "--scoring", "probability", "--out", str(out), "--max-retries", "0"])
    cap = capsys.readouterr()
    assert "Traceback" not in cap.out + cap.err
    data = json.loads(out.read_text(encoding="utf-8"))
    cr = data["metrics"]["context_relevance"]
    assert cr["n_judged"] == 0 and cr["unjudged"] == {"no_probabilities": cr["n"]}
    assert all("not a log-probability" in r["message"] for r in cr["items"])
    assert ei.value.code == 1  # nothing judged


def test_score_with_auto_scoring_keeps_the_written_score_when_log_probabilities_are_broken(tmp_path, capsys,
                                                                                         monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    with _OddLogprobs(1000) as ep:
        with pytest.raises(SystemExit) as ei:
            main(["score", "--qa", "it_helpdesk", "--answers", "it_helpdesk", "--judge-model", "m", "--base-url",
                  ep.base_url, "--cache-dir", str(tmp_path / "c"), "-m", "answer_correctness", "--no-history",
                  "--json"])
    cap = capsys.readouterr()
    assert "Traceback" not in cap.err and ei.value.code == 0
    report = json.loads(cap.out)
    s = report["judge"]["summary"]["(answers)"]["answer_correctness"]
    assert s["n_judged"] == s["n"] > 0
    assert report["judge"]["scoring"]["answer_correctness"] == "sample"
    assert "scoring:sample" in report["judge"]["signatures"]["answer_correctness"]
    assert any("log-probabilities" in n and "written scores" in n for n in report["notes"])
