"""``ragexam serve --review`` on a located set (``locate-evidence``, issue 36 item 2) and on sampled traces
(``traces sample``, issue 38 item 3), over HTTP: the located record shown, the proposed span and its runner-up
marked, accept / runner-up / edit checked at once with the set's own rule, out of corpus for a traced question, and
``review apply`` reading what the browser wrote.  The browser flows are in tests/test_serve_browser_located.py."""

from __future__ import annotations

import csv
import io
import json
import re
import shutil

import pytest

from test_serve_review import client, post, version


@pytest.fixture(scope="module")
def located_dir(tmp_path_factory):
    """ai_concepts without its evidence, its keys paraphrased (tests/test_locate.py), located without e5: six
    questions located with confidence, four uncertain, two unlocated (their best span holds under a fifth of the
    paraphrased key's own words)."""
    from test_locate import _paraphrased, _strip

    from ragexam.questions.locate import LocateSettings
    from ragexam.questions.locate_set import locate_set, write_located

    d = tmp_path_factory.mktemp("located")
    qa = _strip("ai_concepts", d / "qa.jsonl", **_paraphrased())
    write_located(locate_set("ai_concepts", qa, settings=LocateSettings(semantic=False)), d / "located.jsonl")
    return d


def _copy(folder, tmp_path, name):
    """A fresh copy of a set made once (each test writes its own sheet)."""
    shutil.copytree(folder, tmp_path / folder.name)
    return tmp_path / folder.name / name


@pytest.fixture
def located(located_dir, tmp_path):
    return _copy(located_dir, tmp_path, "located.jsonl")


@pytest.fixture(scope="module")
def traced_dir(tmp_path_factory):
    """Ten candidates sampled from the it_helpdesk traffic of tests/test_traces_sample.py (the most frequent)."""
    from test_traces_sample import make_traffic

    from ragexam.analysis.answers.traces import import_traces, sample_traces
    from ragexam.data.traces import writers

    d = tmp_path_factory.mktemp("traced")
    with open(d / "export.jsonl", "w", encoding="utf-8") as fh:
        for m in make_traffic():
            for rec in writers.phoenix_spans(m):
                fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
    import_traces([d / "export.jsonl"], d / "answers.jsonl")
    sample_traces(d / "answers.jsonl", 10, "it_helpdesk", d / "cand.jsonl", strategy="top")
    return d


@pytest.fixture
def traced(traced_dir, tmp_path):
    return _copy(traced_dir, tmp_path, "cand.jsonl")


def records(path):
    return {r["query_id"]: r for r in map(json.loads, path.read_text(encoding="utf-8").splitlines())}


def sheet(path):
    text = path.with_name(path.name.replace(".jsonl", ".review.csv")).read_text(encoding="utf-8-sig")
    return list(csv.reader(io.StringIO(text)))[0], {r["query_id"]: r for r in csv.DictReader(io.StringIO(text))}


def by_status(path, status, key="located"):
    def located_of(r):
        return r["metadata"]["located"] if key == "located" else r["metadata"]["generation"]["located"]

    return [q for q, r in records(path).items() if located_of(r)["status"] == status]


def test_a_located_question_shows_its_record_and_marks_the_span_and_runner_up(located):
    uncertain = by_status(located, "uncertain")[0]
    rec = records(located)[uncertain]["metadata"]["located"]
    span = rec["spans"][0]
    c = client(located)
    page = c.get(f"/review/1/item?key={uncertain}")
    assert page.status_code == 200
    text = page.text
    assert 'id="evidence-status">uncertain<' in text and f"confidence {rec['confidence']:.2f} (threshold 0.6)" in text
    assert '<code id="method">offline</code>' in text and "searched in its relevant documents" in text
    assert rec["reason"] in text.replace("&lt;", "<")
    assert f'{span["margin"]:.2f}' in re.search(r'class="num margin">([^<]*)<', text).group(1)
    proposed = re.search(r'<mark class="proposed"[^>]*>([^<]*)</mark>', text).group(1)
    runner = re.search(r'<mark class="runner"[^>]*>([^<]*)</mark>', text).group(1)
    assert proposed == span["best"]["text"] and runner == span["runner_up"]["text"]
    assert 'id="runner-up"' in text and "accepting takes the proposed span" in text
    assert 'id="ooc"' not in text  # a located set keeps the team's questions: no out-of-corpus conversion
    # the set's list shows each question's evidence status
    listing = c.get("/review/1").text
    assert listing.count('class="badge ev-uncertain"') == 4 and listing.count('class="badge ev-located"') == 6
    assert listing.count('class="badge ev-unlocated"') == 2


def test_accept_takes_the_proposal_runner_up_and_edit_are_checked_and_apply_reads_them(located, tmp_path):
    from ragexam.questions import apply_review

    uncertain, confident = by_status(located, "uncertain"), by_status(located, "located")
    recs = records(located)
    c = client(located)
    header_before, _ = sheet(located)
    take, pick, edit = uncertain[0], uncertain[1], confident[0]
    r = post(c, take, "accept", version(c.get(f"/review/1/item?key={take}"), take))
    assert r.status_code == 303 and "accepted" in r.headers["location"]
    r = post(c, pick, "runner_up", version(c.get(f"/review/1/item?key={pick}"), pick))
    assert r.status_code == 303 and "runner-up" in r.headers["location"]
    # an edit whose evidence is in another question's document only: refused with the rule's reason, nothing written
    doc = recs[edit]["relevant_doc_ids"][0]
    other = next(d for d in ("doc_001", "doc_002", "doc_010") if d != doc)
    from ragexam.data.loaders import load_corpus

    corpus = {d.doc_id: d.content for d in load_corpus("ai_concepts")}
    before = located.with_name("located.review.csv").read_bytes()
    ver = version(c.get(f"/review/1/item?key={edit}"), edit)
    bad = corpus[other].split(". ")[0]
    r = post(c, edit, "save_accept", ver, evidence=bad, question=recs[edit]["question"],
             ground_truth=recs[edit]["ground_truth"])
    assert r.status_code == 422 and "none of the question&#39;s relevant documents" in r.text
    assert "Not saved: the evidence fails the located set's check." in r.text
    assert located.with_name("located.review.csv").read_bytes() == before
    good = corpus[doc].split(". ")[0]
    r = post(c, edit, "save_accept", ver, evidence=good, question=recs[edit]["question"],
             ground_truth=recs[edit]["ground_truth"])
    assert r.status_code == 303
    header, rows = sheet(located)
    assert header == header_before  # a located sheet gets its decision cells only
    assert (rows[take]["status"], rows[take]["evidence"]) == ("accepted", "")
    assert rows[pick]["evidence"] == rows[pick]["runner_up"] and rows[edit]["evidence"] == good
    page = c.get(f"/review/1/item?key={pick}").text
    assert 'id="choice">The evidence is the runner-up span.' in page and "edited:" not in page
    res = apply_review(located, None, tmp_path / "reviewed.jsonl", pending="drop")
    final = records(tmp_path / "reviewed.jsonl")
    assert sorted(final) == sorted([take, pick, edit]) and res.counts["runner_up"] == 1
    assert res.counts["proposed"] == 1 and res.counts["edited"] == 1
    assert final[take]["evidence"] == [recs[take]["metadata"]["located"]["spans"][0]["best"]["text"]]
    assert final[pick]["metadata"]["located"]["choice"] == "runner_up"
    assert final[edit]["evidence"] == [good] and final[edit]["metadata"]["located"]["choice"] == "edited"


def test_a_located_set_without_its_card_is_served_as_located(located):
    """``review apply`` tells a located set by its records when its card is missing; serve reads it the same way
    (it showed a generated set's page, without the proposed span)."""
    from starlette.testclient import TestClient

    from ragexam.serve.app import Catalog, create_app
    from ragexam.serve.security import ServeOptions

    located.with_name("located.card.json").unlink()  # the card named the corpus too: --corpus now
    uncertain = by_status(located, "uncertain")[0]
    c = TestClient(create_app(Catalog.of([located], corpus="ai_concepts"), ServeOptions(port=8765, lang="en")),
                   base_url="http://127.0.0.1:8765")
    text = c.get(f"/review/1/item?key={uncertain}").text
    assert 'id="evidence-status">uncertain<' in text and '<mark class="proposed"' in text
    record = re.search(r'<pre id="record">(.*?)</pre>', text, re.S).group(1)
    assert "&#34;spans&#34;" in record or '"spans"' in record  # the located record, not an empty generation one


def test_a_confidence_just_under_the_threshold_never_reads_as_reaching_it(located):
    """The sheet and the reason show 0.5996 as "0.5996" beside threshold 0.6 (locate.confidence_text); the page
    showed "0.60 (threshold 0.6)"."""
    uncertain = by_status(located, "uncertain")[0]
    lines = located.read_text(encoding="utf-8").splitlines()
    out = []
    for line in lines:
        r = json.loads(line)
        if r["query_id"] == uncertain:
            r["metadata"]["located"]["confidence"] = 0.5996
            r["metadata"]["located"]["spans"][0]["confidence"] = 0.5996
        out.append(json.dumps(r, ensure_ascii=False))
    located.write_text("\n".join(out) + "\n", encoding="utf-8")
    text = client(located).get(f"/review/1/item?key={uncertain}").text
    assert "confidence 0.5996 (threshold 0.6)" in text and "0.60 (threshold" not in text
    assert re.search(r'<td class="num">0\.5996</td>', text)


def test_a_blank_question_is_refused_on_a_located_set(located):
    q = by_status(located, "located")[0]
    c = client(located)
    r = post(c, q, "save", version(c.get(f"/review/1/item?key={q}"), q), question="  ", ground_truth="x")
    assert r.status_code == 422 and "the question is blank" in r.text


def test_a_traced_candidate_shows_its_traffic_contexts_and_located_evidence(traced):
    recs = records(traced)
    uncertain = by_status(traced, "uncertain", "generation")
    assert uncertain and by_status(traced, "located", "generation") and by_status(traced, "unlocated", "generation")
    q = uncertain[0]
    t = recs[q]["metadata"]["trace"]
    page = client(traced).get(f"/review/1/item?key={q}").text
    assert f'id="frequency">asked {t["frequency"]} times' in page
    assert f'{t["distinct_phrasings"]} phrasings' in page and "traced answer" in page
    assert "searched in the documents the trace retrieved" in page
    assert page.count('<div class="data ctx">') == len(t["contexts"]) >= 1
    assert 'id="ooc"' in page and "<mark class=\"proposed\"" in page


def test_traced_decisions_then_apply_validate_and_run(traced, tmp_path):
    from ragexam import api

    recs = records(traced)
    unlocated = by_status(traced, "unlocated", "generation")[0]
    uncertain = by_status(traced, "uncertain", "generation")[0]
    located = by_status(traced, "located", "generation")[:2]
    c = client(traced)
    # accepting a question without evidence or proposal is refused with the way out
    r = post(c, unlocated, "accept", version(c.get(f"/review/1/item?key={unlocated}"), unlocated))
    assert r.status_code == 422 and "no proposed span" in r.text
    r = post(c, unlocated, "out_of_corpus", version(c.get(f"/review/1/item?key={unlocated}"), unlocated))
    assert r.status_code == 303 and "out+of+corpus" in r.headers["location"]
    r = post(c, uncertain, "accept", version(c.get(f"/review/1/item?key={uncertain}"), uncertain))
    assert r.status_code == 303
    for q in located:
        assert post(c, q, "accept", version(c.get(f"/review/1/item?key={q}"), q)).status_code == 303
    _, rows = sheet(traced)
    assert (rows[unlocated]["status"], rows[unlocated]["type"]) == ("accepted", "out_of_corpus")
    exam = tmp_path / "exam.jsonl"
    api.review_apply(traced, exam, pending="drop")
    final = records(exam)
    assert sorted(final) == sorted([unlocated, uncertain, *located])
    assert final[unlocated]["answerable"] is False and final[unlocated]["type"] == "out_of_corpus"
    g = final[uncertain]["metadata"]["generation"]
    assert g["evidence_choice"] == "proposed" and final[uncertain]["evidence"] == \
        [recs[uncertain]["metadata"]["generation"]["located"]["spans"][0]["best"]["text"]]
    assert api.validate("it_helpdesk", exam).ok
    run = api.run_exam({"corpus": "it_helpdesk", "qa": str(exam), "retrievers": ["bm25"]}, record=False,
                       progress=False)
    assert run.result is not None


def test_filters_with_nothing_behind_them_are_not_offered(located):
    """A located set has no candidates a generator rejected (no generator made it) and, before any decision, no
    accepted, rejected or edited question: no filter for 0 items (the one chosen stays)."""
    c = client(located, lang="ko")
    page = c.get("/review/1").text
    form = re.search(r'<form class="filters".*?</form>', page, re.S).group(0)
    assert 'id="f-reason"' not in form and "생성기가 탈락시킨 후보" not in form
    options = re.findall(r'<option value="([^"]*)"', re.search(r'<select name="status".*?</select>', form,
                                                               re.S).group(0))
    assert options == ["pending", "all"]
    assert re.findall(r'<option value="([^"]*)"', re.search(
        r'<select name="status".*?</select>', c.get("/review/1?status=accepted").text, re.S).group(0)) == \
        ["pending", "accepted", "all"]  # chosen by its address: kept


def test_the_edited_count_is_review_applys(traced, tmp_path):
    """Out of corpus and the runner-up span change the record: ``review apply`` says "2 edited and checked again",
    and so does the set page (T4), with an "edited" filter showing those two."""
    from ragexam import api

    c = client(traced)
    pages = {q: c.get(f"/review/1/item?key={q}") for q in records(traced)}
    ooc = next(q for q, p in pages.items() if 'id="ooc"' in p.text and 'id="runner-up"' not in p.text)
    runner = next(q for q, p in pages.items() if 'id="runner-up"' in p.text and q != ooc)
    assert post(c, ooc, "out_of_corpus", version(pages[ooc], ooc)).status_code == 303
    assert post(c, runner, "runner_up", version(pages[runner], runner)).status_code == 303
    res = api.review_apply(traced, tmp_path / "exam.jsonl", pending="drop")
    assert res.counts["edited"] == 2
    page = c.get("/review/1").text
    assert "2 edited" in page
    options = re.findall(r'<option value="([^"]*)"', re.search(r'<select name="status".*?</select>', page,
                                                               re.S).group(0))
    assert "edited" in options
    shown = c.get("/review/1?status=edited").text
    assert f"key={ooc}" in shown and f"key={runner}" in shown and shown.count('<tr class="st-') == 2


def test_taking_back_a_decision_restores_what_it_changed(traced, tmp_path):
    """`o` then `p` (T12c): the question is answerable again -- a later `a` does not accept it out of corpus; the
    runner-up span then `p`: the evidence is the set's again."""
    from ragexam import api

    recs = records(traced)
    c = client(traced)
    pages = {q: c.get(f"/review/1/item?key={q}") for q in recs}
    runner = next(q for q, p in pages.items() if 'id="runner-up"' in p.text)
    ooc = next(q for q, p in pages.items() if 'id="ooc"' in p.text and q != runner
               and recs[q]["metadata"]["generation"]["located"]["status"] in ("located", "uncertain"))
    item = lambda q: c.get(f"/review/1/item?key={q}")  # noqa: E731
    for q, first in ((ooc, "out_of_corpus"), (runner, "runner_up")):
        assert post(c, q, first, version(item(q), q)).status_code == 303
        assert post(c, q, "pending", version(item(q), q)).status_code == 303
    _, rows = sheet(traced)
    assert rows[ooc]["status"] == "pending" and rows[ooc]["type"] == recs[ooc]["type"]
    assert rows[runner]["status"] == "pending"
    assert json.loads(rows[runner]["evidence"] or "[]") == recs[runner].get("evidence", [])
    assert 'id="ooc"' in item(ooc).text  # offered again
    assert post(c, ooc, "accept", version(item(ooc), ooc)).status_code == 303
    final = {r["query_id"]: r for r in api.review_apply(traced, tmp_path / "exam.jsonl", pending="drop").records}
    assert list(final) == [ooc] and final[ooc]["answerable"] is True and final[ooc]["type"] != "out_of_corpus"
