"""Chunkings that run Kiwi are kept in the retrieval cache: a second run of the same corpus does not split it again.

On a KorQuAD-size corpus (961 paragraphs) ``paragraphs:400`` spent ~8 s of a 13 s warm run in Kiwi's sentence
splitter; the kept spans must give exactly the chunks a fresh split gives, and anything that does not fit the
texts (another corpus, a damaged entry) must be split again, never trusted.
"""

from __future__ import annotations

import numpy as np
import pytest

from ragexam.data import chunking as C
from ragexam.data.schema import Document
from ragexam.retrieval.cache import Cache

DOCS = [
    Document("a", "연차는 입사 1년 후 15일이 주어집니다. 사용하지 않은 연차는 다음 해로 넘어가지 않습니다.\n\n"
                            "병가는 연 10일까지 유급입니다. 3일 이상이면 진단서가 필요합니다. 진단서는 인사팀에 냅니다.", "휴가 규정"),
    Document("b", "", "빈 문서"),
    Document("c", "국내 출장은 출발 2영업일 전까지 신청합니다. 해외 출장은 2주 전까지 신청합니다. "
                         "출장비는 돌아온 뒤 5영업일 안에 정산합니다.", "출장"),
]


def _no_kiwi(monkeypatch):
    def refuse(*_a, **_k):
        raise AssertionError("Kiwi was called: the kept chunking was not used")

    monkeypatch.setattr(C, "sentence_spans_many", refuse)
    monkeypatch.setattr(C, "sentence_spans", refuse)


@pytest.mark.parametrize("spec", ["paragraphs:60", "sentences", "sentences:80"])
def test_a_kept_chunking_equals_a_fresh_one_and_skips_kiwi(tmp_path, monkeypatch, spec):
    store = Cache(tmp_path)
    fresh = C.chunk_corpus(DOCS, spec)
    first = C.chunk_corpus(DOCS, spec, store=store)
    assert list(tmp_path.glob("indexes/chunks-*.npz"))
    _no_kiwi(monkeypatch)
    again = C.chunk_corpus(DOCS, spec, store=store)
    for got in (first, again):
        assert got.chunks == fresh.chunks and got.cut_sentences == fresh.cut_sentences and got.spec == spec
    assert any(c.chunk_id == "a#1" for c in again.chunks)


def test_another_text_or_spec_is_split_again(tmp_path, monkeypatch):
    store = Cache(tmp_path)
    C.chunk_corpus(DOCS, "paragraphs:60", store=store)
    changed = [DOCS[0], DOCS[1], Document("c", DOCS[2].content.replace("5영업일", "15영업일"), "출장")]
    calls = []
    real = C.sentence_spans_many
    monkeypatch.setattr(C, "sentence_spans_many", lambda contents: calls.append(1) or real(contents))
    got = C.chunk_corpus(changed, "paragraphs:60", store=store)
    assert calls and got.chunks == C.chunk_corpus(changed, "paragraphs:60").chunks
    assert "15영업일" in " ".join(c.text for c in got.chunks)
    calls.clear()
    monkeypatch.setattr(C, "_kiwi_salt", lambda: "other code")  # changed chunking code: another key
    C.chunk_corpus(DOCS, "paragraphs:60", store=store)
    assert calls
    calls.clear()
    C.chunk_corpus(DOCS, "paragraphs:80", store=store)
    assert calls  # another size: another key
    assert len(list(tmp_path.glob("indexes/chunks-*.npz"))) == 4


def test_windows_that_share_a_start_are_kept_too(tmp_path, monkeypatch):
    """``paragraphs:SIZE`` cuts an over-long sentence into windows stripped of whitespace, so two windows can
    start at the same place: (0, 50), (110, 114), (110, 150) here; such an entry must be read back, not refused."""
    store = Cache(tmp_path)
    docs = [Document("w", "A" * 50 + " " * 60 + "C" * 40)]
    fresh = C.chunk_corpus(docs, "paragraphs:60", store=store)
    assert [(c.start, c.end) for c in fresh.chunks] == [(0, 50), (110, 114), (110, 150)]
    _no_kiwi(monkeypatch)
    monkeypatch.setattr(C.ParagraphChunker, "split_many", lambda *_: (_ for _ in ()).throw(AssertionError("split")))
    assert C.chunk_corpus(docs, "paragraphs:60", store=store).chunks == fresh.chunks


def test_a_subclass_of_a_kiwi_chunker_is_not_kept(tmp_path):
    class Mine(C.SentenceChunker):
        def spans(self, content):
            return [(0, len(content))]

    assert Mine().memo_salt() is None and C.SentenceChunker().memo_salt() is not None
    C.chunk_corpus(DOCS, Mine(), store=Cache(tmp_path))
    assert not list(tmp_path.glob("indexes/chunks-*.npz"))


def test_chunkers_without_kiwi_are_not_kept(tmp_path):
    store = Cache(tmp_path)
    for spec in ("whole", "chars:50:10", "paragraphs", "recursive:60:0"):
        assert C.parse_chunker(spec).memo_salt() is None
        C.chunk_corpus(DOCS, spec, store=store)
    assert not list(tmp_path.glob("indexes/chunks-*.npz"))


@pytest.mark.parametrize("damage", [
    lambda a: {**a, "end": a["end"] + 1000},                        # a span past its text
    lambda a: {**a, "doc": a["doc"][::-1].copy()},                  # documents out of order
    lambda a: {k: v for k, v in a.items() if k != "cut"},           # a field missing
    lambda a: {**a, "start": a["start"][:-1]},                      # lengths differ
    lambda a: {**a, "start": a["end"]},                             # empty spans
    lambda a: {**a, "start": a["start"][[0, 0, *range(2, len(a["start"]))]],
               "end": a["end"][[0, 0, *range(2, len(a["end"]))]]},   # a span repeated
    lambda a: {**a, "start": a["start"].astype(float)},             # not integers
    lambda a: {**a, "cut": np.array([-7])},                         # a negative count
    lambda a: {**a, "cut": np.array(0)},                            # not a list
])
def test_an_entry_that_does_not_fit_the_texts_is_split_again(tmp_path, damage):
    store = Cache(tmp_path)
    fresh = C.chunk_corpus(DOCS, "sentences", store=store)
    (path,) = tmp_path.glob("indexes/chunks-*.npz")
    key = path.stem[len("chunks-"):]
    store.save_index("chunks", key, damage(store.load_index("chunks", key)))
    assert C.chunk_corpus(DOCS, "sentences", store=store).chunks == fresh.chunks


def test_a_run_keeps_its_chunking_and_a_second_run_reads_it(tmp_path, monkeypatch):
    import ragexam

    first = ragexam.run("it_helpdesk", "it_helpdesk", retrievers=["bm25"], chunkers=["paragraphs:300"],
                        cache_dir=tmp_path, progress=False)
    assert list(tmp_path.glob("indexes/chunks-*.npz"))
    _no_kiwi(monkeypatch)
    second = ragexam.run("it_helpdesk", "it_helpdesk", retrievers=["bm25"], chunkers=["paragraphs:300"],
                         cache_dir=tmp_path, progress=False)
    name = "bm25 | paragraphs:300"
    assert second.summary.results[name].metrics == first.summary.results[name].metrics
    assert np.array_equal(second.values[name], first.values[name])


def test_the_chunk_stage_keeps_nothing_when_told_not_to(tmp_path):
    from ragexam.analysis.exam import stages as S

    data = S.load("it_helpdesk", "it_helpdesk")
    plan = S.plan(["bm25"], ["sentences:300", "whole"])
    off = S.chunk(data, plan.chunkers, cache_dir=tmp_path, cache=False)
    assert not list(tmp_path.glob("indexes/chunks-*.npz"))
    on = S.chunk(data, plan.chunkers, cache_dir=tmp_path)
    assert len(list(tmp_path.glob("indexes/chunks-*.npz"))) == 1  # sentences:300 only: whole runs no Kiwi
    assert [s.chunking.chunks for s in on.sets.values()] == [s.chunking.chunks for s in off.sets.values()]


def test_a_run_whose_retrievers_keep_no_cache_keeps_no_chunking(tmp_path):
    import ragexam

    ragexam.run("it_helpdesk", "it_helpdesk", retrievers=["bm25?cache=0"], chunkers=["paragraphs:300"],
                cache_dir=tmp_path, progress=False)
    assert not list(tmp_path.glob("indexes/chunks-*.npz"))
    ragexam.run("it_helpdesk", "it_helpdesk", retrievers=["bm25?cache=0", "hybrid:bm25+bm25"],
                chunkers=["paragraphs:300"], cache_dir=tmp_path, progress=False)
    assert list(tmp_path.glob("indexes/chunks-*.npz"))  # a hybrid's members keep theirs


# -- each document's split kept as it is made (ragexam.data.split_memo) ---------------------------------------------
_REAL_SPLIT = C.sentence_spans_many


class _Killed(Exception):
    pass


def _counting_kiwi(monkeypatch, fail_after=None):
    """Record the texts Kiwi is asked to split; raise :class:`_Killed` (an interrupted run) when ``fail_after``
    texts were split."""
    seen = []
    real = _REAL_SPLIT

    def spy(contents):
        if fail_after is not None and sum(map(len, seen)) >= fail_after:
            raise _Killed
        seen.append(list(contents))
        return real(contents)

    monkeypatch.setattr(C, "sentence_spans_many", spy)
    return seen


def _many_docs(n):
    return [Document(f"d{i}", f"{i}번 문서의 첫 문장입니다. 이 문서는 {i}일 뒤에 만료됩니다. 연장은 인사팀에 신청합니다.", f"문서 {i}")
            for i in range(n)]


def test_an_interrupted_chunking_resumes_from_the_documents_it_split(tmp_path, monkeypatch):
    from ragexam.data import split_memo

    monkeypatch.setattr(split_memo, "BATCH_CHARS", 100)  # two documents a batch
    docs, store = _many_docs(10), Cache(tmp_path)
    fresh = C.chunk_corpus(docs, "sentences")
    _counting_kiwi(monkeypatch, fail_after=5)  # two batches (4 documents) saved, killed in the third
    with pytest.raises(_Killed):
        C.chunk_corpus(docs, "sentences", store=store)
    seen = _counting_kiwi(monkeypatch)
    C._SPLIT_MEMO.clear()  # a new process: nothing in memory
    again = C.chunk_corpus(docs, "sentences", store=store)
    assert again.chunks == fresh.chunks and again.cut_sentences == fresh.cut_sentences
    assert sum(map(len, seen)) == 6  # the 4 documents saved before the interruption were not split again


def test_one_added_document_is_the_only_one_split(tmp_path, monkeypatch):
    docs, store = _many_docs(6), Cache(tmp_path)
    C.chunk_corpus(docs, "paragraphs:40", store=store)
    added = docs + [Document("new", "한 문서를 더 추가했습니다. 이 문장은 새로 나뉘어야 합니다. 다른 문서는 그대로입니다.", "새 문서")]
    seen = _counting_kiwi(monkeypatch)
    C._SPLIT_MEMO.clear()
    got = C.chunk_corpus(added, "paragraphs:40", store=store)
    assert [d for batch in seen for d in batch] == [added[-1].content]
    assert got.chunks == C.chunk_corpus(added, "paragraphs:40").chunks


@pytest.mark.parametrize("value", [b"not json", b"[0, 5]", b"[0, 0, 999]", b"[-1, 0, 5]", b"[0, 9, 3]",
                                   b'[0, 0, 5, 0, 5]', b"[0.5, 0, 5]"])
def test_a_kept_split_that_does_not_fit_its_document_is_split_again(tmp_path, monkeypatch, value):
    from ragexam.data import split_memo

    docs, store = _many_docs(2), Cache(tmp_path)
    fresh = C.chunk_corpus(docs, "sentences")
    identity = split_memo._identity(C.CHUNKING_VERSION, "sentences", C.SentenceChunker().memo_salt())
    store.put_splits(identity, [(split_memo._key(identity, d.content), value) for d in docs])
    seen = _counting_kiwi(monkeypatch)
    C._SPLIT_MEMO.clear()
    assert C.chunk_corpus(docs, "sentences", store=store).chunks == fresh.chunks
    assert seen  # nothing damaged was trusted
