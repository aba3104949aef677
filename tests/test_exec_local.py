"""The local executor, call pools under one rate limit, and stage timing."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import pytest

from ragexam.errors import InputError, RagexamError
from ragexam.exec import EXECUTOR_FORMS, get_executor
from ragexam.exec.base import check_workers, default_workers
from ragexam.exec.calls import LocalCallPool, RateLimit, RateLimiter, limiter_for
from ragexam.exec.local import LocalExecutor
from ragexam.exec.timing import StageTimes, current_stages, record_stages, stage


@dataclass(frozen=True)
class Square:
    """A picklable worker factory: the worker returns (pid, x*x) so tests see where it ran."""

    threads: int = 0
    name: str = "square"

    def with_threads(self, n):
        return Square(n, self.name)

    def __call__(self):
        import os

        def work(items):
            return [(os.getpid(), self.threads, int(x) ** 2) for x in items]

        return work


@dataclass(frozen=True)
class Short:
    def __call__(self):
        return lambda items: items[:-1]


@pytest.mark.parametrize("mode", ["inline", "threads", "processes"])
def test_map_batches_in_input_order_every_mode(mode):
    items = [str(i) for i in range(103)]
    with LocalExecutor(workers=2) as ex:
        out = list(ex.map_batches(Square(), items, batch_size=10, mode=mode))
    assert [s for s, _ in out] == list(range(0, 103, 10))
    flat = [r for _, res in out for r in res]
    assert [v for _, _, v in flat] == [i * i for i in range(103)]
    pids = {p for p, _, _ in flat}
    import os

    if mode == "processes":
        assert os.getpid() not in pids and all(t == 1 for _, t, _ in flat)  # one thread per process
    else:
        assert pids == {os.getpid()}
    if mode == "inline":
        assert all(t == 0 for _, t, _ in flat)  # an inline worker runs as built


def test_a_worker_returning_the_wrong_count_is_an_error():
    with pytest.raises(RagexamError, match="returned 9 results for 10 items"):
        list(LocalExecutor(2).map_batches(Short(), [str(i) for i in range(10)], batch_size=10))
    with pytest.raises(InputError):
        list(LocalExecutor(2).map_batches(Square(), ["1"], batch_size=0))
    with pytest.raises(InputError):
        list(LocalExecutor(2).map_batches(Square(), ["1"], batch_size=1, mode="gpu"))


def test_workers_setting_and_executor_forms():
    assert check_workers(None) is None and check_workers("3") == 3
    for bad in (0, -1, 1.5, True, "two"):
        with pytest.raises(InputError, match="workers"):
            check_workers(bad)
    assert LocalExecutor().workers == default_workers() >= 1
    assert LocalExecutor().explicit_workers is None and LocalExecutor(3).explicit_workers == 3
    assert get_executor(None).name == get_executor("local").name == get_executor(" LOCAL ").name == "local"
    assert get_executor("local", 3).workers == 3
    ex = LocalExecutor(2)
    assert get_executor(ex) is ex
    with pytest.raises(InputError, match="set the workers when you build"):
        get_executor(ex, workers=5)
    for bad in ("spark", "ray:/x", 3):
        with pytest.raises(InputError) as info:
            get_executor(bad)
        assert EXECUTOR_FORMS in str(info.value)


def test_the_executor_setting_has_one_grammar():
    from ragexam.exec import ExecutorSpec, parse_executor

    assert parse_executor(None) == parse_executor(" LOCAL ") == ExecutorSpec("local")
    assert parse_executor("Ray") == ExecutorSpec("ray") and str(parse_executor("ray")) == "ray"
    assert parse_executor(" ray://head-1:10001/ ") == ExecutorSpec("ray", "ray://head-1:10001")
    assert parse_executor("RAY://[::1]:10001").address == "ray://[::1]:10001"
    ex = LocalExecutor(1)
    assert parse_executor(ex) is ex
    cases = {"ray://": "without HOST:PORT", "ray://head": "without a port; expected ray://HOST:PORT (Ray Client "
             "listens on 10001: ray://head:10001)", "ray://head:0": "port '0' is not a number from 1 to 65535",
             "ray://head:http": "port 'http'", "ray://a b:1": "expected HOST:PORT", "ray://::1:5": "expected HOST:PORT",
             "spark": EXECUTOR_FORMS, "": EXECUTOR_FORMS}
    for bad, says in cases.items():
        with pytest.raises(InputError) as info:
            parse_executor(bad, source="run.yaml")
        assert says in str(info.value) and str(info.value).startswith("run.yaml: field 'executor': "), bad


# -- calls ------------------------------------------------------------------------------------------
class Peak:
    """Wraps a call and records the most calls that ran at once."""

    def __init__(self, fn, seconds):
        self.fn, self.seconds, self.running, self.peak = fn, seconds, 0, 0
        self.lock = threading.Lock()

    def __call__(self, x):
        with self.lock:
            self.running += 1
            self.peak = max(self.peak, self.running)
        time.sleep(self.seconds)
        with self.lock:
            self.running -= 1
        return self.fn(x)


class FakeClock:
    def __init__(self):
        self.t = 100.0
        self.lock = threading.Lock()

    def __call__(self):
        return self.t

    def sleep(self, dt):
        with self.lock:
            self.t += dt


def test_rate_limiter_spaces_call_starts_exactly():
    clock = FakeClock()
    lim = RateLimiter(RateLimit(per_second=4), clock=clock, sleep=clock.sleep)
    starts = []
    for _ in range(5):
        lim.acquire()
        starts.append(clock())
        lim.release()
    assert starts == [100.0, 100.25, 100.5, 100.75, 101.0]


def test_rate_limit_validation():
    for bad in ({"per_second": 0}, {"per_second": -1}, {"per_second": float("inf")}, {"concurrency": 0},
                {"concurrency": 1.5}):
        with pytest.raises(InputError):
            RateLimit(**bad)
    with pytest.raises(InputError, match="concurrency"):
        LocalCallPool(lambda x: x, concurrency=0)


def test_call_pool_results_and_one_concurrency_limit_shared_by_pools():
    call = Peak(lambda x: x * 2, 0.01)
    limit = RateLimit(concurrency=3, name="test-shared-endpoint")
    assert limiter_for(limit) is limiter_for(RateLimit(concurrency=3, name="test-shared-endpoint"))
    a = LocalCallPool(call, concurrency=8, limit=limit)
    b = LocalCallPool(call, concurrency=8, limit=limit)
    futures = [p.submit(i) for i in range(30) for p in (a, b)]
    assert sorted(f.result() for f in futures) == sorted(2 * i for i in range(30) for _ in range(2))
    assert list(a.map(range(25))) == [2 * i for i in range(25)]
    a.close()
    b.close()
    assert call.peak == 3  # 16 threads in two pools, never more than the limit's 3 calls at once


def test_call_pool_propagates_a_failing_call():
    def call(x):
        if x == 3:
            raise ValueError("boom")
        return x

    with LocalCallPool(call, concurrency=2) as pool:
        with pytest.raises(ValueError, match="boom"):
            list(pool.map(range(6)))


# -- timing -----------------------------------------------------------------------------------------
def test_stages_are_exclusive_and_add_up():
    t = [0.0]
    times = StageTimes(clock=lambda: t[0])
    times.enter("index")
    t[0] = 1.0
    times.enter("tokenize")  # nested: index pauses
    t[0] = 4.0
    times.exit()
    t[0] = 4.5
    times.exit()
    with times.scope("p1"):
        times.enter("search")
        t[0] = 6.0
        times.exit()
    t[0] = 7.0
    times.stop()
    d = times.to_dict()
    assert d["stages"] == {"tokenize": 3.0, "index": 1.5, "search": 1.5}
    assert list(d["stages"]) == ["tokenize", "index", "search"]  # pipeline order
    assert d["scopes"] == {"p1": {"search": 1.5}}
    assert d["covered_s"] == 6.0 and d["wall_s"] == 7.0


def test_stage_outside_a_recorder_records_nothing():
    assert current_stages() is None
    with stage("load"):
        pass
    with record_stages() as times:
        assert current_stages() is times
        with stage("load"):
            time.sleep(0.001)
    assert current_stages() is None
    assert set(times.to_dict()["stages"]) == {"load"} and times.to_dict()["stages"]["load"] > 0


def test_llm_batch_runner_on_an_executor_call_pool(tmp_path):
    """run_calls hands its calls to the executor's pool (one limit for all) and keeps caching in this process."""
    from ragexam.llm.batch import Outcome, Store, run_calls
    from ragexam.llm.cache import LLMCache

    call = Peak(lambda task: Outcome({"answer": task.upper()}, requests=1, replies=1, prompt_tokens=2,
                                     completion_tokens=1), 0.005)

    cache = LLMCache(tmp_path)
    pairs = [(f"k{i}", f"t{i}") for i in range(20)]
    b = run_calls(pairs, call, store=Store(cache, "test", "m", "http://e/v1"), concurrency=8,
                  executor=LocalExecutor(2), limit=RateLimit(concurrency=2, name="test-batch"))
    assert b.values == {f"k{i}": {"answer": f"T{i}"} for i in range(20)} and b.usage.calls == 20
    assert call.peak == 2 and len(cache) == 20 and cache.claims() == []
    again = run_calls(pairs, call, store=Store(cache, "test", "m", "http://e/v1"),
                      executor=LocalExecutor(2))
    assert again.usage.calls == 0 and again.usage.cached == 20


def test_the_process_pool_is_kept_for_an_equal_factory():
    with LocalExecutor(workers=2) as ex:
        a = {p for _, res in ex.map_batches(Square(), [str(i) for i in range(20)], batch_size=5, mode="processes")
             for p, _, _ in res}
        b = {p for _, res in ex.map_batches(Square(), [str(i) for i in range(20)], batch_size=5, mode="processes")
             for p, _, _ in res}
        # the same two processes (which of them takes a batch is up to the pool): workers and their
        # models were not built again
        assert len(a | b) <= 2
        c = {p for _, res in ex.map_batches(Square(name="other"), ["1", "2"] * 5, batch_size=5, mode="processes")
             for p, _, _ in res}
        assert not c & (a | b)  # another factory: a new pool
