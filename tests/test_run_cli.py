"""``ragexam run`` on the command line: --json, --out, -k forms, config files (YAML, TOML), errors."""

from __future__ import annotations

import json

import pytest

from ragexam.cli import main
from test_run_api import write_set

VOLATILE = ("run_id", "created", "timing")  # timing: seconds measured, never equal twice


def _cli(argv, capsys):
    with pytest.raises(SystemExit) as ex:
        main([str(a) for a in argv])
    out = capsys.readouterr()
    return ex.value.code or 0, out.out, out.err


def _stable(summary):
    return {k: v for k, v in summary.items() if k not in VOLATILE}


@pytest.fixture()
def files(tmp_path):
    return write_set(tmp_path)


BASE = ["-r", "bm25:whitespace", "-r", "hybrid:bm25:whitespace+bm25:whitespace?k=1", "--chunker", "paragraphs",
        "--n-resamples", "100", "--n-permutations", "100"]


def test_json_output_follows_the_format(files, capsys):
    corpus, qa = files
    code, out, _ = _cli(["run", "--corpus", corpus, "--qa", qa, *BASE, "-k", "1,3", "--json"], capsys)
    assert code == 0
    s = json.loads(out)  # nothing but the JSON object on stdout
    assert s["format"] == "ragexam-run/3"
    for key in ("run_id", "created", "ragexam_version", "config", "dataset", "pipelines", "results",
                "comparisons", "missed", "unmatched_evidence"):
        assert key in s
    assert s["config"]["k"] == [1, 3] and s["config"]["depth"] == 100 and s["config"]["relevance"] == "evidence"
    assert s["config"]["retrievers"] == ["bm25:whitespace", "hybrid:bm25:whitespace+bm25:whitespace?k=1"]
    names = [p["name"] for p in s["pipelines"]]
    assert names == ["bm25:whitespace | paragraphs", "hybrid:bm25:whitespace+bm25:whitespace?k=1 | paragraphs"]
    r = s["results"][names[0]]
    assert r["n"] == 3 and set(r["metrics"]) >= set(s["main_metrics"])
    assert all(r["ci95"][m] is None for m in s["main_metrics"])  # 3 questions: too few for an interval
    assert set(r["sweep"]) == {"1", "3"} and set(r["fbeta"]) == {"0.5", "1", "2"}
    comps = s["comparisons"]
    assert [c["metric"] for c in comps] == s["main_metrics"]
    for c in comps:
        assert c["baseline"] == names[0] and c["pipeline"] == names[1]
        assert 0 < c["p_value"] <= 1 and c["p_value"] <= c["p_holm"] <= 1
        assert c["verdict"] and len(c["ci95"]) == 2
        # no minimum detectable difference where the per-question differences do not vary
        assert c["mdd"] > 0 if c["mdd"] is not None else "identical values" in c["verdict"]
    assert s["dataset"]["n_out_of_corpus"] == 1 and s["dataset"]["n_scored"] == 3


def test_k_forms_are_equal(files, capsys):
    corpus, qa = files
    _, a, _ = _cli(["run", "--corpus", corpus, "--qa", qa, *BASE, "-k", "1", "-k", "3", "--json"], capsys)
    _, b, _ = _cli(["run", "--corpus", corpus, "--qa", qa, *BASE, "-k", "1,3", "--json"], capsys)
    assert _stable(json.loads(a)) == _stable(json.loads(b))


def test_tables_and_out_dir(files, tmp_path, capsys):
    corpus, qa = files
    out_dir = tmp_path / "run1"
    code, out, _ = _cli(["run", "--corpus", corpus, "--qa", qa, *BASE, "--out", out_dir], capsys)
    assert code == 0
    for heading in ("Retrieval metrics", "P@K / R@K / F1@K sweep", "By question type", "vs  baseline",
                    "verdict on hit@5", "Missed by", "Signatures", "out-of-corpus"):
        assert heading in out, heading
    assert (out_dir / "summary.json").exists() and (out_dir / "per_question.csv").exists()
    assert len(list((out_dir / "runs").glob("*.units.qrels"))) == 2


TOML = """
corpus = "{corpus}"
qa = "{qa}"
retrievers = ["bm25:whitespace", "hybrid:bm25:whitespace+bm25:whitespace?k=1"]
chunker = "paragraphs"
k = [1, 3]
miss-k = 3
n_resamples = 100
n_permutations = 100
seed = 7
"""

YAML = """
corpus: {corpus}
qa: {qa}
retrievers: [bm25:whitespace, "hybrid:bm25:whitespace+bm25:whitespace?k=1"]
chunkers: [paragraphs]
k: "1,3"
miss_k: 3
n_resamples: 100
n_permutations: 100
seed: 7
"""


@pytest.mark.parametrize("suffix,template", [(".toml", TOML), (".yaml", YAML)])
def test_config_file_equals_flags(files, tmp_path, capsys, suffix, template):
    corpus, qa = files
    cfg = tmp_path / f"run{suffix}"
    cfg.write_text(template.format(corpus=corpus.as_posix(), qa=qa.as_posix()), encoding="utf-8")
    _, from_file, _ = _cli(["run", "--config", cfg, "--json"], capsys)
    _, from_flags, _ = _cli(["run", "--corpus", corpus, "--qa", qa, *BASE[:6], "-k", "1,3", "--miss-k", "3",
                             "--n-resamples", "100", "--n-permutations", "100", "--seed", "7", "--json"], capsys)
    assert _stable(json.loads(from_file)) == _stable(json.loads(from_flags))
    # a flag overrides the file
    _, overridden, _ = _cli(["run", "--config", cfg, "--seed", "8", "-k", "5", "--json"], capsys)
    s = json.loads(overridden)
    assert s["config"]["seed"] == 8 and s["config"]["k"] == [5]


def test_bad_config_key_exits_2_naming_it(files, tmp_path, capsys):
    corpus, qa = files
    cfg = tmp_path / "run.toml"
    cfg.write_text(f'corpus = "{corpus.as_posix()}"\nretreivers = ["bm25"]\n', encoding="utf-8")
    code, out, err = _cli(["run", "--config", cfg, "--qa", qa], capsys)
    assert code == 2 and out == ""
    assert "retreivers" in err and "valid keys" in err and "retrievers" in err
    cfg = tmp_path / "run.yaml"
    cfg.write_text("qa: x\ndepht: 10\n", encoding="utf-8")
    code, _, err = _cli(["run", "--config", cfg], capsys)
    assert code == 2 and "depht" in err


def test_missing_corpus_and_bad_values_exit_2(files, capsys):
    corpus, qa = files
    code, _, err = _cli(["run", "--qa", qa, "-r", "bm25:whitespace"], capsys)
    assert code == 2 and "--corpus" in err
    code, _, err = _cli(["run", "--corpus", corpus, "--qa", qa, "-r", "bm25:whitespace", "-k", "0"], capsys)
    assert code == 2 and "k" in err
    code, _, err = _cli(["run", "--corpus", corpus, "--qa", qa, "-r", "nope"], capsys)
    assert code == 2 and "unknown retriever" in err
