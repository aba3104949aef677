"""Ray across two nodes: a head and a worker node on this machine (``ray start --head`` + ``ray start --address``,
each with one CPU and its own raylet, token authentication on), driven through Ray Client (``ray://``).

* ``ragexam run --executor ray://…`` and ``ragexam score --executor ray://…`` on the bundled set give every
  metric and verdict of the local run, and ``summary.json``'s ``timing.placement`` shows the work on both nodes;
* the worker node killed (SIGKILL of all its processes) while it holds a batch: the batch runs again on the
  head, every result is right, and the loss is recorded.

The cluster (:class:`ragexam.exec.cluster.LocalCluster`) starts once for the module and its process groups are
ended at the end; ports are free ones, so it can share the machine with other Ray runtimes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="Ray is an optional extra (pip install 'ragexam[ray]'); CI installs it")
pytest.importorskip("grpc", reason="Ray Client needs ray[client] (in ragexam[ray]); CI installs it")

from ragexam.exec.cluster import LocalCluster  # noqa: E402

pytestmark = pytest.mark.slow

VOLATILE = ("run_id", "created", "timing")


@pytest.fixture(scope="module")
def cluster():
    assert not ray.is_initialized(), "another test module left Ray running in this process"
    paths = [str(Path(__file__).resolve().parent), os.environ.get("PYTHONPATH", "")]  # the test's worker factory
    saved = {k: os.environ.get(k) for k in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN")}
    with LocalCluster(cpus=(1, 1), node_env={"PYTHONPATH": os.pathsep.join(p for p in paths if p)}) as c:
        os.environ.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=c.token)  # this process drives through Ray Client too
        try:
            yield c
        finally:
            if ray.is_initialized():
                ray.shutdown()
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


def _cli(cluster, *args, cache=None, timeout=900):
    """``ragexam ARGS`` with the cluster's token; ``cache`` None: the test session's cache (conftest)."""
    env = {**cluster.env, "RAGEXAM_CACHE_DIR": str(cache or os.environ["RAGEXAM_CACHE_DIR"])}
    proc = subprocess.run([sys.executable, "-m", "ragexam.cli", *map(str, args)], env=env, capture_output=True,
                          text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:] + "\n" + cluster.log_tail()[-6000:]
    return proc


def _stable(summary):
    out = {k: v for k, v in summary.items() if k not in VOLATILE}
    out["config"] = {k: v for k, v in out["config"].items() if k != "executor"}
    return out


def test_run_on_two_nodes_gives_the_local_metrics_and_records_both_nodes(cluster, tmp_path):
    args = ["run", "--corpus", "it_helpdesk", "--qa", "it_helpdesk", "-r", "bm25", "-r", "dense", "-r",
            "hybrid:bm25+dense", "--no-history"]
    _cli(cluster, *args, "--out", tmp_path / "local")
    proc = _cli(cluster, *args, "--out", tmp_path / "ray", "--executor", cluster.client_address,
                cache=tmp_path / "ray-cache")
    assert "core_worker" not in proc.stderr and " INFO " not in proc.stderr, proc.stderr
    local = json.loads((tmp_path / "local" / "summary.json").read_text(encoding="utf-8"))
    on_ray = json.loads((tmp_path / "ray" / "summary.json").read_text(encoding="utf-8"))
    assert _stable(on_ray) == _stable(local)  # every metric, interval, test, verdict and missed list
    assert on_ray["config"]["executor"] == cluster.client_address
    assert "== ray_client_server" in cluster.log_tail()  # what a failed connection is reported with
    assert (tmp_path / "ray" / "per_question.csv").read_bytes() == (tmp_path / "local" / "per_question.csv").read_bytes()

    timing = on_ray["timing"]
    assert timing["where"] == {"executor": "ray", "workers": 2, "gpus": 0, "nodes": 2}
    placed = timing["placement"]
    assert len(placed["nodes"]) == 2 and placed["retried_batches"] == 0 and placed["lost_workers"] == {}
    assert sorted(n["host"].endswith(" (head)") for n in placed["nodes"].values()) == [False, True]
    # the chunks and questions were tokenized and embedded on the cluster (the cache was empty), and the
    # embedding batches ran on both nodes
    per_stage = {s: sum(c.get("items", 0) for c in nodes.values()) for s, nodes in placed["stages"].items()}
    assert per_stage["tokenize"] == per_stage["embed"] > 65  # every chunk and the 65 questions
    assert set(placed["stages"]["embed"]) == set(placed["nodes"])


def test_score_on_two_nodes_gives_the_local_verdicts_with_calls_on_both_nodes(cluster, tmp_path):
    from test_judge_stub import API_KEY, start_stub

    stub, shutdown = start_stub()
    try:
        def score(name, *extra):
            _cli(cluster, "score", "--answers", "it_helpdesk", "--qa", "it_helpdesk", "--judge-model", "stub-judge",
                 "--base-url", stub.base_url, "--api-key", API_KEY, "--metric", "answer_correctness", "--metric",
                 "abstention", "--concurrency", "4", "--no-history", "--no-judge-check", "--out", tmp_path / name,
                 *extra,
                 cache=tmp_path / f"{name}-cache")
            return json.loads((tmp_path / name / "score.json").read_text(encoding="utf-8"))

        local = score("local")
        n_local = len(stub.requests)
        on_ray = score("ray", "--executor", cluster.client_address)
        assert len(stub.requests) - n_local == n_local == 71  # every call made again, on the cluster

        # where the calls ran: the same judge through the Python API, counted per node
        from ragexam.api import score as api_score
        from ragexam.exec.ray_exec import RayExecutor
        from ragexam.exec.timing import record_stages
        from ragexam.llm.settings import LLMSettings

        judge = LLMSettings("stub-judge", base_url=stub.base_url, api_key=API_KEY, concurrency=4,
                            cache_dir=str(tmp_path / "api-cache"))
        with RayExecutor(cluster.client_address) as ex, record_stages() as times:
            alive = [(n["NodeID"][:12], n["Alive"]) for n in ray.nodes()]
            api_score("it_helpdesk", "it_helpdesk", judge=judge, metrics=["answer_correctness"], record=False,
                      executor=ex, judge_check=False)  # the judging's calls alone
    finally:
        shutdown()
    # the same judge: every setting but the endpoint probe's bookkeeping (when it asked, whether from a cache)
    def judge_block(score_json):
        block = {k: v for k, v in score_json["judge"].items() if k != "settings"}
        if isinstance(block.get("probe"), dict):
            block["probe"] = {k: v for k, v in block["probe"].items() if k not in ("checked", "cached", "requests")}
        return block

    assert judge_block(on_ray) == judge_block(local)
    calls = times.to_dict()["placement"]["stages"]["calls"]
    assert len(calls) == 2 and sum(c["calls"] for c in calls.values()) == 65, (calls, alive)  # 65 answerable questions
    assert all(c["actors"] >= 1 and c["calls"] > 0 for c in calls.values())


@dataclass(frozen=True)
class SlowOnWorker:
    """A worker factory: each batch writes ``<marker_dir>/<node>-<first item>`` when it starts, then takes
    ``seconds``; results are ``(node, x*x)``."""

    marker_dir: str
    seconds: float = 0.5
    name: str = "slow-square"

    def __call__(self):
        import ray as _ray

        node = _ray.get_runtime_context().get_node_id()[:12]

        def work(items):
            Path(self.marker_dir, f"{node}-{items[0]}").touch()
            time.sleep(self.seconds)
            return [(node, int(x) ** 2) for x in items]

        return work


def test_a_worker_node_killed_mid_run_is_survived_with_every_result_right(cluster, tmp_path):
    """Runs last: the worker node does not come back."""
    from ragexam.exec.ray_exec import RayExecutor
    from ragexam.exec.timing import record_stages, stage

    if not ray.is_initialized():
        ray.init(cluster.client_address, log_to_driver=False, logging_level="warning")
    head = next(n["NodeID"][:12] for n in ray.nodes() if n["Alive"] and n.get("Resources", {}).get(
        "node:__internal_head__"))
    markers = tmp_path / "markers"
    markers.mkdir()
    killed = threading.Event()

    def kill_when_worker_node_busy():
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not killed.is_set():
            if any(not p.name.startswith(head) for p in markers.iterdir()):
                cluster.kill_node(1)  # the worker node holds a batch right now
                killed.set()
                return
            time.sleep(0.05)

    watcher = threading.Thread(target=kill_when_worker_node_busy, daemon=True)
    watcher.start()
    items = [str(i) for i in range(24)]
    ex = RayExecutor(cluster.client_address, workers=2)
    with record_stages() as times, stage("embed"):
        got = [r for _, res in ex.map_batches(SlowOnWorker(str(markers)), items, batch_size=2) for r in res]
    watcher.join(5)
    assert killed.is_set()
    assert [v for _, v in got] == [i * i for i in range(24)]  # every result, in order, none wrong
    placed = times.to_dict()["placement"]
    worker = next(n for n in placed["nodes"] if n != head)
    assert placed["lost_workers"] == {worker: 1} and placed["retried_batches"] >= 1
    assert sum(c["batches"] for c in placed["stages"]["embed"].values()) == 12
