"""The audit routes of ``ragexam serve`` without a browser: what each action writes, and what a bad request gets
(a page with the reason, nothing written); the set's page in queue order."""

from __future__ import annotations

import re

from audit_sets import make_generated_set, truth
from ragexam.questions.audit import audit_path, audit_status, read_audit


def client(qa):
    """A test client of the app reviewing ``qa`` over the bundled it_helpdesk corpus, English pages."""
    from starlette.testclient import TestClient

    from ragexam.serve.app import Catalog, create_app
    from ragexam.serve.security import ServeOptions

    opts = ServeOptions(port=8765, lang="en")
    c = TestClient(create_app(Catalog.of([qa], corpus="it_helpdesk"), opts), base_url="http://127.0.0.1:8765")
    c.csrf = opts.csrf
    return c


def act(c, **fields):
    return c.post("/review/1/audit", data={"csrf": c.csrf, **fields}, follow_redirects=False)


def shown_key(page):
    return re.search(r'name="key" value="([^"]+)"', page.text).group(1)


def test_start_label_undo_and_the_estimate_on_the_pages(tmp_path):
    qa = make_generated_set(tmp_path, 40)
    c = client(qa)
    assert "Draw the sample" in c.get("/review/1/audit").text and not audit_path(qa).exists()
    r = act(c, action="start", sample="4")
    assert r.status_code == 303 and r.headers["location"] == "/review/1/audit"
    assert len(read_audit(qa).sample) == 4
    page = c.get("/review/1/audit")
    first = shown_key(page)
    assert first == read_audit(qa).sample[0] and "question 1 of the 4 sampled" in page.text
    act(c, action="label", key=first, label="good")
    second = shown_key(c.get("/review/1/audit"))
    act(c, action="label", key=second, reason="vague")  # a bad reason's button sends its reason only
    assert read_audit(qa).labels[second].label == "bad" and read_audit(qa).labels[second].reason == "vague"
    r = act(c, action="undo")
    assert "Undone" in c.get(r.headers["location"]).text and second not in read_audit(qa).labels
    act(c, action="label", key=second, label="good")
    text = audit_status(qa).text()
    assert text == "junk 0% [0%–82%], 2 of 40 audited (so far: 2 of the 4 sampled)"
    assert text in c.get("/").text and text in c.get("/review/1").text and text in c.get("/review/1/audit").text


def test_a_bad_audit_request_is_a_page_with_the_reason_and_writes_nothing(tmp_path):
    qa = make_generated_set(tmp_path, 40)
    c = client(qa)
    act(c, action="start", sample="3")
    before = audit_path(qa).read_bytes()
    outside = next(q for q in truth(qa) if q not in read_audit(qa).sample)
    for fields in ({"action": "label", "key": outside, "label": "good"},  # not in the sample: never the user's pick
                   {"action": "label", "key": read_audit(qa).sample[0], "label": "bad"},  # bad needs a reason
                   {"action": "label", "key": read_audit(qa).sample[0], "reason": "nonsense"},
                   {"action": "explode"}, {"action": "start", "sample": "many"}, {"action": "start", "sample": "0"}):
        r = act(c, **fields)
        assert r.status_code == 422, (fields, r.status_code)
        assert audit_path(qa).read_bytes() == before
    assert c.post("/review/1/audit", data={"action": "undo"}).status_code == 403  # no CSRF token
    assert c.get("/review/9/audit").status_code == 404
    qa.write_text(qa.read_text(encoding="utf-8") + "\n", encoding="utf-8")  # the set changed
    page = c.get("/review/1/audit")
    assert "The set changed after its audit" in page.text and 'id="audit-item"' not in page.text


def test_the_set_page_steps_through_the_review_queue(tmp_path):
    qa = make_generated_set(tmp_path, 60, risky=True)
    c = client(qa)
    act(c, action="start", sample="30")
    bad = truth(qa)
    while (m := re.search(r'name="key" value="([^"]+)"', c.get("/review/1/audit").text)) is not None:
        key = m.group(1)
        act(c, action="label", key=key, **({"reason": "wrong_key"} if bad[key] else {"label": "good"}))
    page = c.get("/review/1")
    assert "likely junk first" in page.text and "put junk first: ROC AUC 1.00" in page.text
    listed = re.findall(r'<a href="/review/1/item\?[^"]*key=(gen_\d+)[^"]*">', c.get("/review/1?order=queue").text)
    assert listed[:15] and all(bad[k] for k in listed[:15]) and not any(bad[k] for k in listed[15:])
    item = c.get(f"/review/1/item?status=pending&order=queue&key={listed[0]}")
    nxt = re.search(r'id="next" rel="next" href="([^"]+)"', item.text).group(1)
    assert f"key={listed[1]}" in nxt and "order=queue" in nxt


def test_the_queue_and_the_stop_point_speak_the_pages_language(tmp_path):
    """Korean pages say whether the checks' signals order the queue and where to stop in Korean (the catalogue);
    a set nobody audited gets no stop point at all."""
    from starlette.testclient import TestClient

    from ragexam.serve.app import Catalog, create_app
    from ragexam.serve.security import ServeOptions

    qa = make_generated_set(tmp_path / "a", 60, risky=True)
    fresh = make_generated_set(tmp_path / "b", 10)
    opts = ServeOptions(port=8765, lang="ko")
    c = TestClient(create_app(Catalog.of([qa, fresh], corpus="it_helpdesk"), opts), base_url="http://127.0.0.1:8765")
    line = re.search(r'<div class="box audit-line".*?</div>', c.get("/review/2").text, re.S).group(0)
    assert "검수 전에는 알 수 없습니다" in line and "검사 신호를 측정하지 않았습니다 (검수 없음)" in line
    assert "predicted" not in line and "the checks" not in line and 'lang="en"' not in line
    c.csrf = opts.csrf
    act(c, action="start", sample="40")
    bad = truth(qa)
    while (m := re.search(r'name="key" value="([^"]+)"', c.get("/review/1/audit").text)) is not None:
        act(c, action="label", key=m.group(1), **({"reason": "wrong_key"} if bad[m.group(1)] else {"label": "good"}))
    line = re.search(r'<div class="box audit-line".*?</div>', c.get("/review/1").text, re.S).group(0)
    assert "검사 신호가 불량을 앞에 둡니다: ROC AUC 1.00 [0.91–1.00], 검수 40개 (불량 " in line
    assert "순서의 처음 18개를 검토한 뒤: 나머지 42개의 불량이 최대 " in line and "그중 검수한 " in line
    assert "the checks" not in line and "after the first" not in line and 'lang="en"' not in line
    en = c.get("/review/1?lang=en").text
    assert "after the first 18 of the queue: the remaining 42 are predicted at most" in en
