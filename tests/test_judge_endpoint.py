"""The judge against a scripted local OpenAI-compatible server (through ragexam.llm, real HTTP).

Every scripted reply -- good, bad JSON, truncated, out of range, wrong count, refusals, 429,
500, a timeout, a server without response_format -- must end as a valid score or as
"unjudged" with the right reason, and the coverage must count them.
"""

from __future__ import annotations

import json

import pytest

from test_judge_stub import API_KEY, start_stub

from ragexam.metrics.judge import REASONS, EndpointError, Judge, JudgeItem

CTX = ("VPN-ERR-619는 UDP 4500 포트가 막힌 경우입니다.", "프린터 용지 걸림은 덮개를 열고 빼세요.",
       "계정 잠금은 30분 뒤 풀립니다.")


@pytest.fixture
def stub():
    s, shutdown = start_stub()
    yield s
    shutdown()


def item(scenario="good", qid="q1", contexts=CTX, answer="UDP 4500 포트가 막혀서입니다. TCP 443 모드로 바꾸세요.",
         ground_truth="UDP 4500 포트가 막힌 경우입니다. TCP 443 모드로 바꾸면 됩니다."):
    return JudgeItem(qid, f"VPN-ERR-619 오류는 왜 나요? [[s:{scenario}]]", answer, tuple(contexts), ground_truth)


#: the keywords of Judge itself; the others are the endpoint's (LLMSettings)
JUDGE_OPTIONS = {"max_attempts", "language", "retry_unjudged", "custom", "scoring", "reasoning", "quoted", "executor"}


def make_judge(stub, tmp_path, **kw):
    from ragexam.llm import LLMClient, LLMSettings

    slept = []
    kw.setdefault("max_retries", 2)
    kw.setdefault("backoff", 0.01)
    options = {k: kw.pop(k) for k in list(kw) if k in JUDGE_OPTIONS}
    settings = LLMSettings("stub-judge", base_url=stub.base_url, api_key=API_KEY, cache_dir=str(tmp_path / "cache"),
                           **kw)
    j = Judge(settings=settings, client=LLMClient(settings, sleep=slept.append), **options)  # sleeps recorded
    j.slept = slept
    return j


def one(judge, it, metric="context_relevance"):
    run = judge.run([it], [metric])
    assert len(run.judgments) == 1
    return run, run.judgments[0]


def test_good_replies_for_every_metric(stub, tmp_path):
    judge = make_judge(stub, tmp_path)
    run = judge.run([item()], ["context_relevance", "faithfulness", "answer_correctness", "abstention"])
    by = {j.metric: j for j in run.judgments}
    assert all(j.status == "judged" for j in by.values())
    cr = by["context_relevance"]
    assert cr.details["scores"] == [5, 1, 1] and cr.score == pytest.approx(7 / 3)
    assert cr.details["average_reported"] == 2.33 and cr.details["average_mismatch"] is False
    assert by["faithfulness"].score == 1.0 and by["faithfulness"].label == "faithful"
    assert by["answer_correctness"].score == 5 and by["answer_correctness"].label == "correct"
    assert by["abstention"].score == 1.0 and by["abstention"].label == "abstained"
    assert run.language == "ko"
    for j in by.values():
        assert j.rubric.endswith("/ko/v2") and len(j.rubric_sha) == 16 and j.attempts == 1
        assert j.prompt_tokens == 100 and j.completion_tokens == 20
    # JSON schema was sent (strongest response_format), temperature 0
    body = next(b for b in stub.requests if b["response_format"]["json_schema"]["name"] == "context_relevance")
    assert body["response_format"]["type"] == "json_schema" and body["temperature"] == 0
    scores = body["response_format"]["json_schema"]["schema"]["properties"]["scores"]
    assert scores["minItems"] == scores["maxItems"] == 3 and "logprobs" not in body  # the item's own count
    assert run.usage["calls"] == 4 and run.usage["prompt_tokens"] == 400
    assert run.usage["cost_usd"] == "unknown"  # not the OpenAI API
    s = run.summary("context_relevance")
    assert (s.n, s.n_judged, s.coverage, s.unjudged) == (1, 1, 1.0, {})
    assert "rubric:context_relevance/ko/v2@" in run.signatures["context_relevance"]
    assert "|scoring:sample|" in run.signatures["context_relevance"]
    assert API_KEY not in json.dumps(run.signatures)


def test_bad_json_every_time_is_unjudged_after_max_attempts(stub, tmp_path):
    judge = make_judge(stub, tmp_path, max_attempts=3)
    run, j = one(judge, item("bad_json"))
    assert j.status == "unjudged" and j.reason == "invalid_json" and j.score is None
    assert j.attempts == 3 and len(stub.requests) == 3 and len(j.errors) == 3
    # the validation error was fed back to the judge
    follow_up = stub.requests[1]["messages"]
    assert [m["role"] for m in follow_up] == ["system", "user", "assistant", "user"]
    assert "no complete JSON object" in follow_up[-1]["content"]
    assert follow_up[2]["content"] == "점수는 5점입니다. 아주 좋아요."
    s = run.summary("context_relevance")
    assert s.coverage == 0.0 and s.mean is None and s.unjudged == {"invalid_json": 1}


def test_bad_json_once_then_valid(stub, tmp_path):
    run, j = one(make_judge(stub, tmp_path), item("bad_json_once"))
    assert j.status == "judged" and j.attempts == 2 and j.errors[0]["reason"] == "invalid_json"
    assert j.prompt_tokens == 200  # both replies counted


def test_truncated_reply(stub, tmp_path):
    run, j = one(make_judge(stub, tmp_path, max_attempts=2, max_tokens=100), item("truncated"))
    assert j.reason == "truncated" and j.attempts == 2
    assert [b["max_tokens"] for b in stub.requests] == [100, 200]  # cut without a loop: a longer budget
    assert "잘렸습니다" in stub.requests[1]["messages"][-1]["content"]


def test_a_reply_cut_in_a_loop_is_not_paid_double(stub, tmp_path):
    run, j = one(make_judge(stub, tmp_path, max_attempts=3, max_tokens=100), item("loop"))
    assert j.reason == "truncated" and j.attempts == 3 and "in a loop: '3,' repeated" in j.message
    assert [b["max_tokens"] for b in stub.requests] == [100, 100, 100]
    assert ["frequency_penalty" in b for b in stub.requests] == [False, True, True]
    assert "되풀이" in stub.requests[1]["messages"][-1]["content"] and "'3,' repeated" in \
        stub.requests[1]["messages"][-1]["content"]


@pytest.mark.parametrize("scenario, needle", [("range", "value 1 is 7"), ("count", "it holds 2: [3, 3]")])
def test_out_of_range_and_wrong_count(stub, tmp_path, scenario, needle):
    run, j = one(make_judge(stub, tmp_path, max_attempts=2), item(scenario))
    assert j.status == "unjudged" and j.reason == "invalid_reply" and needle in j.message
    rule = '"scores" must be a list of exactly 3 integers (an integer from 1 to 5), one per context'
    assert rule in j.message and needle in stub.requests[1]["messages"][-1]["content"]
    assert rule in stub.requests[1]["messages"][-1]["content"]  # the retry quotes the broken rule


@pytest.mark.parametrize("scenario", ["refusal", "text_refusal"])
def test_refusals(stub, tmp_path, scenario):
    run, j = one(make_judge(stub, tmp_path, max_attempts=2), item(scenario))
    assert j.status == "unjudged" and j.reason == "refused" and "refused" in j.message


def test_429_then_success_respects_retry_after(stub, tmp_path):
    judge = make_judge(stub, tmp_path)
    run, j = one(judge, item("r429_once"))
    assert j.status == "judged" and j.requests == 2 and j.attempts == 1
    assert judge.slept == [0.0]


def test_500_every_time_is_unjudged_and_not_cached(stub, tmp_path):
    judge = make_judge(stub, tmp_path, max_retries=2)
    run, j = one(judge, item("r500"))
    assert j.reason == "server_error" and j.requests == 3 and len(stub.requests) == 3
    assert len(judge.slept) == 2 and all(0.0 <= s <= 0.02 for s in judge.slept)  # backoff with jitter
    judge.run([item("r500")], ["context_relevance"])
    assert len(stub.requests) == 6  # transport failures are retried on the next run


def test_a_body_that_is_not_json_is_retried_then_unjudged(stub, tmp_path):
    run, j = one(make_judge(stub, tmp_path, max_retries=1), item("not_json"))
    assert j.status == "unjudged" and j.reason == "bad_response" and j.requests == 2
    assert "not JSON" in j.message


def test_500_once_then_success(stub, tmp_path):
    run, j = one(make_judge(stub, tmp_path), item("r500_once"))
    assert j.status == "judged" and j.requests == 2


def test_timeout(stub, tmp_path):
    stub.slow_seconds = 1.5
    judge = make_judge(stub, tmp_path, timeout=0.3, max_retries=1)
    run, j = one(judge, item("slow"))
    assert j.status == "unjudged" and j.reason == "timeout" and j.requests == 2
    assert run.summary("context_relevance").unjudged == {"timeout": 1}


def test_endpoint_without_response_format_falls_back_and_parses_first_object(stub, tmp_path):
    stub.reject_response_format = True
    judge = make_judge(stub, tmp_path, concurrency=1)
    run = judge.run([item(qid="a"), item(qid="b", contexts=CTX[:2])], ["context_relevance"])
    assert [j.status for j in run.judgments] == ["judged", "judged"]
    formats = [b.get("response_format", {}).get("type") for b in stub.requests]
    # first call walks the ladder (the full schema, the portable one, JSON mode, nothing); the second starts where
    # the first succeeded
    assert formats == ["json_schema", "json_schema", "json_object", None, None]
    portable = stub.requests[1]["response_format"]["json_schema"]["schema"]["properties"]["scores"]
    assert "minItems" not in portable and portable["items"]["enum"] == [1, 2, 3, 4, 5]
    assert judge.client.response_format == "none"
    assert "format:none" in run.signatures["context_relevance"]


def test_mixed_coverage_and_reasons(stub, tmp_path):
    judge = make_judge(stub, tmp_path, max_attempts=2, max_retries=1)
    items = [item("good", "q1"), item("bad_json", "q2"), item("range", "q3"), item("count", "q4"),
             item("r500", "q5"), item("refusal", "q6"), item("bad_json_once", "q7"), item("mismatch", "q8"),
             item("good", "q9", contexts=())]
    run = judge.run(items, ["context_relevance"])
    s = run.summary("context_relevance")
    assert s.n == 9 and s.n_judged == 3 and s.coverage == pytest.approx(3 / 9)
    assert s.unjudged == {"invalid_reply": 2, "invalid_json": 1, "server_error": 1, "refused": 1,
                          "no_contexts": 1}
    assert s.mean == pytest.approx(7 / 3)  # unjudged items are not averaged in
    assert s.average_mismatch == 1
    assert all(r in REASONS for r in s.unjudged)
    assert all(j.score is None for j in run.judgments if j.status == "unjudged")


def test_no_claims_is_not_applicable(stub, tmp_path):
    run, j = one(make_judge(stub, tmp_path), item(answer="문서에서 찾을 수 없습니다."), "faithfulness")
    assert j.status == "unjudged" and j.reason == "no_claims" and j.attempts == 0 and stub.requests == []
    run, j = one(make_judge(stub, tmp_path), item(answer="TCP 443 모드로 바꾸세요. 문서에서 찾을 수 없는 내용도 있습니다."),
                 "faithfulness")
    assert j.status == "judged" and [c["claim"] for c in j.details["claims"]] == ["TCP 443 모드로 바꾸세요."]
    schema = stub.requests[0]["response_format"]["json_schema"]["schema"]["properties"]["supported"]
    assert schema["minItems"] == schema["maxItems"] == 1


def test_auto_scoring_probes_the_endpoint_once(stub, tmp_path):
    judge = make_judge(stub, tmp_path, scoring="auto")
    run, j = one(judge, item())
    assert len(stub.probes) == 1
    probe = stub.probes[0]
    assert probe["logprobs"] is True and probe["seed"] == 12345
    assert run.probe["logprobs"] == "no" and run.probe["json_schema"] == "enforced"
    assert j.scoring == "sample" and "|scoring:sample|" in run.signatures["context_relevance"]
    judge2 = make_judge(stub, tmp_path, scoring="auto")
    judge2.run([item(qid="q2")], ["context_relevance"])
    assert len(stub.probes) == 1  # the second judge read the stored probe
    with pytest.raises(Exception) as ei:  # probability scoring on an endpoint without logprobs: an input error
        make_judge(stub, tmp_path, scoring="probability").run([item(qid="q3")], ["context_relevance"])
    assert "returns no token log-probabilities" in str(ei.value) and "--scoring sample" in str(ei.value)


def test_missing_inputs_make_no_call(stub, tmp_path):
    judge = make_judge(stub, tmp_path)
    run = judge.run([item(answer=None, ground_truth=None, contexts=())],
                    ["context_relevance", "faithfulness", "answer_correctness", "abstention"])
    assert [j.reason for j in run.judgments] == ["no_contexts", "no_answer", "no_answer", "no_answer"]
    assert stub.requests == []


def test_unauthorized_stops_the_run_without_the_key(tmp_path):
    from http.server import BaseHTTPRequestHandler

    from test_judge_stub import send_json, serve

    class H(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            send_json(self, 401, {"error": {"message": f"Incorrect API key provided: {self.headers['Authorization']}"}})

    address, shutdown = serve(H)
    try:
        judge = Judge("m", base_url=f"{address}/v1", api_key=API_KEY, cache_dir=str(tmp_path))
        with pytest.raises(EndpointError) as ei:
            judge.run([item()], ["context_relevance"])
        assert "HTTP 401" in str(ei.value) and API_KEY not in str(ei.value)
    finally:
        shutdown()


def test_english_prompts_for_english_data(stub, tmp_path):
    it = JudgeItem("e1", "Why does VPN error 619 appear? [[s:good]]", "Port blocked.", ("UDP port 4500 blocked.",),
                   "UDP 4500 is blocked.")
    run = make_judge(stub, tmp_path).run([it], ["context_relevance"])
    assert run.language == "en" and run.judgments[0].rubric == "context_relevance/en/v2"
    assert "[Context 1] : UDP port 4500 blocked." in stub.requests[0]["messages"][1]["content"]
