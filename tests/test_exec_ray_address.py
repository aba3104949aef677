"""A Ray address that does not answer fails at once, naming the address (Ray itself retried for 823 s).

Each case runs in a fresh process (no Ray runtime of the test session is touched); the bound is the
subprocess timeout, far below Ray's own retries, and the probe's own limit (``CONNECT_TIMEOUT``)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

pytest.importorskip("ray", reason="Ray is an optional extra (pip install 'ragexam[ray]'); CI installs it")

from ragexam.exec.ray_exec import CONNECT_TIMEOUT  # noqa: E402


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _cli(*args, env_extra=None, timeout=60):
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", **(env_extra or {})}
    return subprocess.run([sys.executable, "-m", "ragexam.cli", *args], env=env, capture_output=True, text=True,
                          timeout=timeout)


def test_the_probe_limit_is_well_under_the_issue_bound():
    assert CONNECT_TIMEOUT <= 10


@pytest.mark.parametrize("address, says", [
    ("bogus:1234", "cannot reach Ray at RAY_ADDRESS=bogus:1234: the host 'bogus' does not resolve"),
    ("ray://bogus:1234", "cannot reach Ray at RAY_ADDRESS=ray://bogus:1234: the host 'bogus' does not resolve"),
])
def test_run_with_an_unreachable_ray_address_fails_naming_it(tmp_path, address, says):
    proc = _cli("run", "--corpus", "it_helpdesk", "--qa", "it_helpdesk", "-r", "bm25:whitespace", "--executor", "ray",
                "--out", str(tmp_path / "run"), env_extra={"RAY_ADDRESS": address})
    assert proc.returncode == 2, proc.stderr
    assert says in " ".join(proc.stderr.split()) and "ray start --head" in proc.stderr
    assert not (tmp_path / "run").exists()


def test_a_refused_port_is_named_for_ray_and_ray_client():
    port = _closed_port()
    code = ("import sys\nfrom ragexam.errors import InputError\nfrom ragexam.exec import get_executor\n"
            "try:\n    get_executor(sys.argv[1])\nexcept InputError as e:\n    print(e)\n")
    for spec, env, named in (("ray", {"RAY_ADDRESS": f"127.0.0.1:{port}"}, f"RAY_ADDRESS=127.0.0.1:{port}"),
                             (f"ray://127.0.0.1:{port}", {}, f"ray://127.0.0.1:{port}")):
        out = subprocess.run([sys.executable, "-c", code, spec], env={**os.environ, "RAY_AUTH_MODE": "disabled", **env},
                             capture_output=True, text=True, timeout=60).stdout
        assert f"cannot reach Ray at {named}: Connection refused within" in out, out


def test_score_on_an_unreachable_cluster_fails_instead_of_hanging(tmp_path):
    """``score --executor ray`` hung for 150 s: it now stops before the first call, naming the address."""
    from test_judge_stub import API_KEY, start_stub

    stub, shutdown = start_stub()
    try:
        proc = _cli("score", "--answers", "it_helpdesk", "--qa", "it_helpdesk", "--judge-model", "stub-judge",
                    "--base-url", stub.base_url, "--executor", "ray", "--metric", "answer_correctness",
                    env_extra={"RAY_ADDRESS": "bogus:1234", "OPENAI_API_KEY": API_KEY})
    finally:
        shutdown()
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "cannot reach Ray at RAY_ADDRESS=bogus:1234" in " ".join(proc.stderr.split())
    assert len(stub.requests) == 0
