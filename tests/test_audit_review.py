"""What the audit drives (issue 37.2-3): the review queue by predicted risk and its measured AUC, the stop point,
``review apply --max-junk`` and the written set's own audit, ``ragexam check --max-junk``, and the same estimate on
the card, ``review apply``'s output and a run's dataset card (console and HTML report)."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest
from typer.testing import CliRunner

from audit_sets import make_generated_set, truth
from ragexam.cli import app
from ragexam.questions.audit import AUDITED, REVIEWED, audit_path, audit_status, read_audit
from ragexam.questions.auditing import label_question, next_question, open_audit
from ragexam.questions.review import apply_review
from ragexam.questions.risk import (MIN_EACH, pending_bound, rest_interval, review_queue, risk, signals,
                                    stop_point, stop_starts)
from ragexam.stats.hypergeometric import hypergeometric_interval


def audit(qa, sample=20, seed=12345):
    open_audit(qa, sample, seed)
    bad = truth(qa)
    while (qid := next_question(read_audit(qa))) is not None:
        label_question(qa, qid, "bad", "wrong_key") if bad[qid] else label_question(qa, qid, "good")
    return audit_status(qa)


def records(qa):
    return {r["query_id"]: r for r in map(json.loads, qa.read_text(encoding="utf-8").splitlines())}


def set_sheet(qa, decide):
    """Write the set's review sheet with ``decide(query_id) -> status``."""
    path = qa.with_name(qa.stem + ".review.csv")
    rows = list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8-sig"))))
    for r in rows:
        r["status"] = decide(r["query_id"])
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    path.write_text("\ufeff" + buf.getvalue(), encoding="utf-8")


# -- the risk and the queue ---------------------------------------------------------------------------------------
def test_each_signal_points_the_way_its_check_means():
    good = {"question": "q", "ground_truth": "짧은 답", "evidence": ["아주 긴 근거 문장이 여기에 있습니다"], "type": "meaning",
            "metadata": {"generation": {"critic": {"score": 3}, "reader": {"agreement": "contained"},
                                        "answer_check": {"method": "contained"}, "overlap": 0.9}}}
    bad = {"question": "q", "ground_truth": "아주 긴 근거 문장이 여기에 있습니다", "evidence": ["아주 긴 근거 문장이 여기에 있습니다"],
           "type": "multi", "metadata": {"generation": {
               "critic": {"score": 1}, "reader": {"agreement": "judge", "score": 4},
               "answer_check": {"method": "judge", "score": 0.5}, "overlap": 0.1}}}
    sg, sb = signals(good), signals(bad)
    assert set(sg) == set(sb) == {"critic", "reader", "answer_check", "overlap", "key_share", "two_documents"}
    assert all(sb[k] > sg[k] for k in sg)
    assert risk(bad) > risk(good) and risk({"question": "no record"}) == 0.5


def test_without_an_audit_the_queue_is_random_and_says_why(tmp_path):
    qa = make_generated_set(tmp_path, 40, risky=True)
    q = review_queue(records(qa), None)
    assert q.by == "random" and "not measured (no audit)" in q.check.text()
    assert sorted(q.order) == sorted(records(qa)) and q.order == review_queue(records(qa), None).order  # seeded


def test_signals_that_separate_order_the_queue_likely_junk_first(tmp_path):
    qa = make_generated_set(tmp_path, 60, risky=True)
    audit(qa, 40)
    q = review_queue(records(qa), read_audit(qa))
    assert q.check.helps and q.by == "risk" and q.check.auc.auc == 1.0 and q.check.auc.low > 0.5
    bad = truth(qa)
    assert all(bad[x] for x in q.order[:15]) and not any(bad[x] for x in q.order[15:])
    # a perfect order on 40 is not certainty: the interval is never narrower than Wilson's (issue 41.4)
    assert "put junk first: ROC AUC 1.00 [0.91–1.00], n = 40 audited (" in q.check.text()
    assert stop_starts(60) == [0, 6, 12, 18, 24, 30, 36, 42, 48, 54]
    stop = stop_point(q, read_audit(qa), 0.1)
    assert stop is not None and stop.start == 18  # the first stop point past the 15 likely-junk questions
    assert stop.interval.population == 42 and stop.interval.bad == 0 and stop.interval.high <= 0.1
    assert "after the first 18 of the queue, the remaining 42" in stop.text()


def test_the_audits_sample_and_the_queues_order_are_different_random_streams(tmp_path):
    """Were the queue's random order the audit's sample order, the audited questions would come first and the
    rest of the queue would look unaudited (or, ties broken so, audited junk would gather at the top)."""
    qa = make_generated_set(tmp_path, 60)
    a = open_audit(qa, 20, 12345).audit
    q = review_queue(records(qa), None)
    assert set(q.order[:20]) != set(a.sample)


def test_signals_that_do_not_separate_leave_the_queue_random(tmp_path):
    qa = make_generated_set(tmp_path, 60, risky=False)  # every question looks the same to the checks
    audit(qa, 30)
    q = review_queue(records(qa), read_audit(qa))
    assert not q.check.helps and q.by == "random"
    assert q.check.auc.low <= 0.5 <= q.check.auc.high
    assert "do not tell junk from good" in q.check.text() and "includes 0.5" in q.check.text()


def test_too_few_audited_of_either_kind_is_not_measured(tmp_path):
    qa = make_generated_set(tmp_path, 60, risky=True)
    audit(qa, 6)
    q = review_queue(records(qa), read_audit(qa))
    assert q.check.auc is None and q.by == "random" and f"at least {MIN_EACH} bad" in q.check.text()


def test_the_bound_of_what_a_review_leaves_holds_at_least_95_percent_of_the_time():
    """2,000 simulated sets, audits and reviews: queues in random order or with the junk gathered at the top (as a
    queue that works puts it), reviewers who stop anywhere or exactly at the stop point the audit suggests (chosen by
    the labels themselves), and a few questions reviewed out of order.  The bad questions left pending are at most
    the bound in >= 95 % of them."""
    from ragexam.questions.audit import AuditFile, Label
    from ragexam.questions.risk import ReviewQueue, SignalCheck  # noqa: F401 (the queue a reviewer works down)

    rng = np.random.default_rng(0)
    held = trials = 0
    for _ in range(2000):
        n = int(rng.integers(8, 80))
        bad = rng.random(n) < rng.uniform(0.05, 0.6)
        ids = [f"q{i}" for i in range(n)]
        key = bad * rng.uniform(0, 2) + rng.random(n)  # how well the order puts junk first: not at all to fully
        order = [ids[i] for i in np.argsort(-key, kind="stable")]
        sample = [ids[i] for i in rng.permutation(n)[:int(rng.integers(1, n + 1))]]
        labels = {q: Label(q, "bad" if bad[int(q[1:])] else "good", "vague" if bad[int(q[1:])] else None)
                  for q in sample}
        a = AuditFile("s", "h", n, 1, sample, labels)
        whole = hypergeometric_interval(sum(lab.label == "bad" for lab in labels.values()), len(sample), n)
        queue = ReviewQueue(tuple(order), "risk", {q: 0.5 for q in ids}, SignalCheck(0, 0))
        stop = stop_point(queue, a, float(rng.uniform(0.02, 0.4)))
        head = stop.start if stop is not None and rng.random() < 0.5 else int(rng.integers(0, n + 1))
        reviewed = set(order[:head]) | {q for q in ids if rng.random() < 0.05}
        decisions = {q: ("rejected" if bad[int(q[1:])] else "accepted") if q in reviewed else "pending" for q in ids}
        b = pending_bound(queue, a, whole, decisions)
        assert b.bad_high <= b.pending
        held += sum(bad[int(q[1:])] for q in ids if decisions[q] == "pending") <= b.bad_high
        trials += 1
    assert held / trials >= 0.95


def test_rest_interval_uses_only_the_audited_questions_in_the_rest(tmp_path):
    qa = make_generated_set(tmp_path, 40)
    audit(qa, 10)
    a = read_audit(qa)
    q = review_queue(records(qa), a)
    rest = set(q.order[25:])
    labs = [lab for lab in a.counted()[0] if lab.query_id in rest]
    iv = rest_interval(q, a, 25)
    assert (iv.population, iv.n, iv.bad) == (15, len(labs), sum(lab.label == "bad" for lab in labs))
    assert iv.confidence == 0.995  # the ten stop points' bounds hold together


# -- review apply --max-junk -------------------------------------------------------------------------------------
def test_review_apply_refuses_a_set_whose_junk_bound_is_above_max_junk_and_writes_nothing(tmp_path):
    qa = make_generated_set(tmp_path / "set", 60)
    status = audit(qa, 20)
    out = tmp_path / "reviewed.jsonl"
    res = CliRunner().invoke(app, ["review", "apply", "--qa", str(qa), "--out", str(out), "--max-junk", "0.1"])
    assert res.exit_code == 1 and not out.exists() and not audit_path(out).exists()
    assert f"the set's audit: {status.text()}" in res.output
    assert "refused: the reviewed set could hold up to" in res.output and "more than --max-junk 10%" in res.output


def test_review_apply_accepts_below_max_junk_and_writes_the_sets_own_audit(tmp_path):
    qa = make_generated_set(tmp_path / "set", 60)
    status = audit(qa, 20)
    out = tmp_path / "reviewed.jsonl"
    res = CliRunner().invoke(app, ["review", "apply", "--qa", str(qa), "--out", str(out), "--max-junk", "0.6"])
    assert res.exit_code == 0, res.output
    assert f"the set's audit: {status.text()}" in res.output
    written = audit_status(out)
    assert written.state == REVIEWED and written.derived.bound.pending == 60
    assert written.junk_high == pytest.approx(status.interval.high_count / 60)
    assert f"junk at most {round(100 * written.junk_high)}%: 60 not reviewed (qa.jsonl: " in written.text()  # no "0 …"


def test_every_question_reviewed_passes_any_max_junk_even_without_an_audit(tmp_path):
    qa = make_generated_set(tmp_path / "set", 40)
    bad = truth(qa)
    set_sheet(qa, lambda q: "reject" if bad[q] else "accept")
    out = tmp_path / "reviewed.jsonl"
    res = apply_review(qa, None, out, max_junk=0.0)
    assert res.refused is None and res.bound.bad_high == 0 and res.audit.state == "not_audited"
    assert audit_status(out).text() == "every question accepted by a person (30 of 30)"


def test_a_review_from_the_top_of_a_risk_queue_uses_the_rest_of_the_queue(tmp_path):
    """The reviewer worked down the queue (likely junk first) to its stop point: ``review apply --max-junk`` then
    passes (the rest's bound, or the set's less the rejected ones: the smaller); left unreviewed, it refuses."""
    qa = make_generated_set(tmp_path / "set", 60, risky=True)
    audit(qa, 40)
    q = review_queue(records(qa), read_audit(qa))
    stop = stop_point(q, read_audit(qa), 0.1)
    head = set(q.order[:stop.start])
    bad = truth(qa)
    set_sheet(qa, lambda x: ("reject" if bad[x] else "accept") if x in head else "pending")
    res = apply_review(qa, None, tmp_path / "reviewed.jsonl", max_junk=0.1)
    assert res.refused is None and res.bound.bad_high <= stop.interval.high_count
    set_sheet(qa, lambda x: "pending")
    assert apply_review(qa, None, tmp_path / "r2.jsonl", max_junk=0.1).refused is not None


# -- check --max-junk and the dataset card ---------------------------------------------------------------------
def test_check_gates_on_the_audited_junk_rate_of_a_set(tmp_path):
    qa = make_generated_set(tmp_path, 60)
    run = CliRunner().invoke
    res = run(app, ["check", "--qa", str(qa), "--max-junk", "0.5"])
    assert res.exit_code == 1 and "FAIL junk <= 50%: not audited, so nothing is known of its junk" in res.output
    status = audit(qa, 20)
    res = run(app, ["check", "--qa", str(qa), "--max-junk", "0.5"])
    assert res.exit_code == 0 and f"PASS junk <= 50%: 95% upper bound {round(100 * status.interval.high)}%" \
        in res.output
    res = run(app, ["check", "--qa", str(qa), "--max-junk", "0.2"])
    assert res.exit_code == 1 and status.text() in res.output
    res = run(app, ["check", "--qa", str(qa)])
    assert res.exit_code != 0


def test_the_same_estimate_on_the_card_review_apply_and_a_runs_dataset_card(tmp_path, monkeypatch):
    qa = make_generated_set(tmp_path / "set", 60)
    status = audit(qa, 20)
    text = status.text()
    assert status.state == AUDITED and text.startswith("junk ") and text.endswith("20 of 60 audited")
    card = json.loads(qa.with_name("qa.card.json").read_text(encoding="utf-8"))
    assert card["audit"]["text"] == text
    res = CliRunner().invoke(app, ["review", "apply", "--qa", str(qa), "--out", str(tmp_path / "r.jsonl")])
    assert res.exit_code == 0 and text in res.output
    monkeypatch.setenv("COLUMNS", "250")
    out = tmp_path / "run"
    res = CliRunner().invoke(app, ["run", "--corpus", "it_helpdesk", "--qa", str(qa), "-r", "bm25", "--out", str(out),
                                   "--report", str(tmp_path / "report.html")])
    assert res.exit_code == 0, res.output
    assert f"audit     {text}" in res.output
    assert text in (tmp_path / "report.html").read_text(encoding="utf-8")
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["dataset"]["audit"]["text"] == text
    res = CliRunner().invoke(app, ["check", str(out), "--max-junk", "0.9"])
    assert res.exit_code == 0 and text in res.output


def test_a_run_made_before_the_audit_shows_the_audit_of_the_bytes_it_read(tmp_path):
    """The run recorded "not audited"; the set is audited afterwards, unchanged: the run's report shows the audit.
    Then the set is edited: the run still read the audited bytes, the set file no longer has them."""
    qa = make_generated_set(tmp_path / "set", 40)
    out = tmp_path / "run"
    res = CliRunner().invoke(app, ["run", "--corpus", "it_helpdesk", "--qa", str(qa), "-r", "bm25", "--out", str(out)])
    assert res.exit_code == 0 and "not audited" in res.output
    text = audit(qa, 10).text()
    res = CliRunner().invoke(app, ["report", str(out), "--out", str(tmp_path / "r.html")])
    assert res.exit_code == 0, res.output
    assert text in (tmp_path / "r.html").read_text(encoding="utf-8")
    qa.write_text(qa.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    assert audit_status(qa).state == "stale"


def test_a_generated_sets_card_says_not_audited_until_a_person_audits_it(tmp_path):
    """``generate`` writes the card's audit block (``not audited``); a resumed run that writes the very bytes an
    audit read keeps the audit."""
    from test_generate_review import generate_set
    from test_generate_stub import GOOD

    generate_set(tmp_path, lambda d: GOOD[d])
    qa = tmp_path / "qa.jsonl"
    card = json.loads((tmp_path / "qa.card.json").read_text(encoding="utf-8"))
    assert card["audit"]["state"] == "not_audited" and card["audit"]["text"] == "not audited"
    status = audit(qa, 4)
    from types import SimpleNamespace

    from ragexam.questions.output import write_outputs

    rows = [json.loads(line) for line in qa.read_text(encoding="utf-8").splitlines()]
    rejects = [json.loads(line) for line in (tmp_path / "qa.rejects.jsonl").read_text(encoding="utf-8").splitlines()]
    write_outputs(SimpleNamespace(records=rows, rejects=rejects, card=card), qa)  # a resumed run: the same bytes
    card = json.loads((tmp_path / "qa.card.json").read_text(encoding="utf-8"))
    assert card["audit"]["text"] == status.text() and status.text().endswith("4 of 4 audited (every question)")


# -- what a set nobody audited, or audited whole, says (defects A, B, C, F) -------------------------------------
def test_a_review_of_a_set_nobody_audited_gives_no_junk_bound(tmp_path):
    """Accepted questions were read by a person; the pending ones nobody read, and no label bounds their junk: the
    written set reads "not audited" (no bound computed from 0 labels), and --max-junk refuses it whatever the rate."""
    qa = make_generated_set(tmp_path / "set", 40)
    set_sheet(qa, lambda q: "accept" if int(q.split("_")[1]) <= 30 else "pending")
    out = tmp_path / "reviewed.jsonl"
    res = apply_review(qa, None, out)
    assert res.bound is not None and not res.bound.audited and not res.bound.known
    assert res.to_dict()["written_junk"]["rate_high"] is None
    status = audit_status(out)
    assert status.state == REVIEWED and status.junk_high is None
    assert status.text() == "not audited (review apply: 30 accepted by a person, 10 not reviewed; qa.jsonl not " \
                            "audited either)"
    assert status.text("ko").startswith("검수 안 됨 (review apply: 사람이 승인 30개, 검토 안 됨 10개")
    refused = apply_review(qa, None, tmp_path / "r2.jsonl", max_junk=1.0).refused
    assert refused is not None and "qa.jsonl is not audited" in refused and "--pending drop" in refused
    res = CliRunner().invoke(app, ["check", "--qa", str(out), "--max-junk", "0.5"])
    assert res.exit_code == 1 and "not audited" in res.output
    # a sidecar written before the bound said whether it was audited reads the same
    d = json.loads(audit_path(out).read_text(encoding="utf-8"))
    del d["derived"]["bound"]["audited"]
    audit_path(out).write_text(json.dumps(d), encoding="utf-8")
    assert audit_status(out).text() == status.text() and audit_status(out).junk_high is None


def test_no_stop_point_without_audited_labels_and_never_after_the_last_question(tmp_path):
    qa = make_generated_set(tmp_path, 3)
    assert stop_starts(3) == [0, 1, 2] and stop_starts(12) == [0, 2, 3, 4, 5, 6, 8, 9, 10, 11]
    q = review_queue(records(qa), None)
    assert stop_point(q, None, 0.1) is None and stop_point(q, None, 1.0) is None
    res = CliRunner().invoke(app, ["review", "queue", "--qa", str(qa)])
    assert res.exit_code == 0 and "remaining 0" not in res.output and "predicted" not in res.output
    assert "stop: not known without an audit" in res.output and f"`ragexam review audit {qa}`" in res.output
    audit(qa, 3)  # every question audited, all good: the whole set holds no junk, known exactly
    stop = stop_point(review_queue(records(qa), read_audit(qa)), read_audit(qa), 0.1)
    assert stop is not None and stop.start == 0 and (stop.interval.population, stop.interval.n) == (3, 3)
    assert "none bad of the 3 audited among them" in stop.text()


def test_a_set_audited_whole_is_refused_with_the_questions_labelled_bad_to_reject(tmp_path):
    """Every question audited: the bound is exact, a larger sample does not exist; the fix names the questions the
    audit labelled bad, and rejecting them in the review sheet lets the set pass."""
    qa = make_generated_set(tmp_path / "set", 12)
    audit(qa, 20)
    out = tmp_path / "reviewed.jsonl"
    res = CliRunner().invoke(app, ["review", "apply", "--qa", str(qa), "--out", str(out), "--max-junk", "0.1"])
    assert res.exit_code == 1 and not out.exists()
    bad = sorted(q for q, b in truth(qa).items() if b)
    assert f"reject the {len(bad)} questions the audit labelled bad (" in res.output
    assert all(q in res.output for q in bad) and "qa.review.csv" in res.output and "--sample" not in res.output
    set_sheet(qa, lambda q: "reject" if q in bad else "pending")
    res = CliRunner().invoke(app, ["review", "apply", "--qa", str(qa), "--out", str(out), "--max-junk", "0.1"])
    assert res.exit_code == 0, res.output
    assert f"Wrote 9 questions to {out}: 9 pending kept; 3 rejected left out." in res.output.replace("\n", " ")
    # the audit labelled every question: what the written set holds is counted, not a 95% bound
    said = " ".join(res.output.split())
    assert "the written set: junk at most 0% (at most 0 of 9: 9 not reviewed; counted from the audit of every " \
           "question: the ones it labelled bad that nobody reviewed)" in said and "95% bound" not in said
    assert audit_status(out).derived.bound.exact


def test_questions_labelled_bad_that_a_person_accepted_are_not_counted_as_unread_junk(tmp_path):
    """E8: a person read the audited-bad questions, fixed them and accepted them; --max-junk still counted them
    (the bound was the audit's bad less the rejected ones) and its fix said to reject what was just repaired.  An
    accepted question was read by a person: only the audited-bad questions the review keeps unread count, and the
    fix names only those."""
    qa = make_generated_set(tmp_path / "set", 12)
    audit(qa, 20)
    bad = sorted(q for q, b in truth(qa).items() if b)
    out = tmp_path / "reviewed.jsonl"
    set_sheet(qa, lambda q: "accept" if q in bad[:2] else "reject" if q in bad[2:] else "pending")
    res = apply_review(qa, None, out, max_junk=0.05)
    assert res.refused is None and res.bound.bad_high == 0 and res.bound.exact and out.exists()
    set_sheet(qa, lambda q: "accept" if q == bad[0] else "pending")  # the other bad ones left unread
    res = apply_review(qa, None, tmp_path / "r2.jsonl", max_junk=0.05)
    assert res.bound.bad_high == len(bad) - 1 and res.refused is not None
    assert f"reject the {len(bad) - 1} questions the audit labelled bad ({', '.join(bad[1:])})" in res.refused
    # a partial audit: the accepted audited-bad questions come off the set's upper bound like the rejected ones
    from ragexam.questions.risk import pending_bound

    qa = make_generated_set(tmp_path / "partial", 40)
    whole = audit(qa, 20).interval
    a = read_audit(qa)
    labelled = [lab.query_id for lab in a.counted()[0] if lab.label == "bad"]
    q = review_queue(records(qa), a)
    unread = pending_bound(q, a, whole, {x: "pending" for x in records(qa)})
    read = pending_bound(q, a, whole, {x: "accepted" if x in labelled else "pending" for x in records(qa)})
    assert labelled and unread.bad_high == whole.high_count and read.bad_high == whole.high_count - len(labelled)


def test_a_partial_audit_suggests_a_larger_sample_within_the_set(tmp_path):
    qa = make_generated_set(tmp_path / "set", 30)
    audit(qa, 20)
    res = apply_review(qa, None, tmp_path / "r.jsonl", max_junk=0.05)
    assert res.refused is not None and f"`ragexam review audit {qa} --sample 30`" in res.refused


def test_check_of_a_run_names_the_set_file_to_audit(tmp_path, monkeypatch):
    qa = make_generated_set(tmp_path / "set", 20)
    out = tmp_path / "run"
    res = CliRunner().invoke(app, ["run", "--corpus", "it_helpdesk", "--qa", str(qa), "-r", "bm25", "--out", str(out),
                                   "--no-history"])
    assert res.exit_code == 0, res.output
    monkeypatch.setenv("COLUMNS", "250")
    res = CliRunner().invoke(app, ["check", str(out), "--max-junk", "0.1"])
    assert res.exit_code == 1 and f"`ragexam review audit {qa}`" in res.output and "audit QA" not in res.output


def test_a_failed_junk_gate_says_the_fix_naming_the_set(tmp_path):
    """Review E26: ``FAIL junk <= 10%: 95% upper bound 42% …`` printed no fix line."""
    qa = make_generated_set(tmp_path, 60)
    audit(qa, 20)
    res = CliRunner().invoke(app, ["check", "--qa", str(qa), "--max-junk", "0.01"])
    assert res.exit_code == 1 and "FAIL junk <= 1%: 95% upper bound" in res.output
    text = " ".join(res.output.split())
    assert f"audit more of its questions to narrow the bound: `ragexam review audit {qa}`" in text, text
    ok = CliRunner().invoke(app, ["check", "--qa", str(qa), "--max-junk", "1"])
    assert ok.exit_code == 0 and "Fix:" not in ok.output
