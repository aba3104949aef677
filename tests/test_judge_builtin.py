"""The built-in judge metrics are one module each (``ragexam.metrics.judge.builtin``): found there with no other
edit, declared with keywords, their texts, versions and hashes unchanged from the tables they came from (so the
cache entries, score folders and recorded replies users hold still match), and each metric's name written in its
own module only."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path
from typing import Dict, Iterator, List, Tuple

import pytest

from test_judge_replies import PINNED

import ragexam
from ragexam.metrics.judge import builtin, registry
from ragexam.metrics.judge.contract import Contract, Field, Levels, Text
from ragexam.metrics.judge.metric import Allowance, JudgeMetric
from ragexam.metrics.judge.prompts import Prompts
from ragexam.metrics.judge.registry import builtin_metrics, default_metrics, metric_help, registered

SRC = Path(ragexam.__file__).resolve().parent

#: the built-in metrics in report order (their ``order``), as the hand-kept tables listed them
ORDER = ("context_relevance", "context_precision", "context_recall", "faithfulness", "answer_relevancy",
         "answer_correctness", "abstention", "pairwise")


def test_the_built_in_rubrics_keep_their_versions_and_hashes():
    """Every cache key, signature and recorded reply users hold carries these (``PINNED``: the hashes of the
    earlier hand-kept tables)."""
    got = {r.name: r.sha for m in builtin_metrics().values() for r in m.rubrics.values()}
    assert got == PINNED
    assert [list(m.rubrics) for m in builtin_metrics().values()] == [["ko", "en"]] * len(ORDER)
    assert tuple(builtin_metrics()) == ORDER
    assert default_metrics("score") == ("context_relevance", "faithfulness", "answer_correctness", "abstention")
    assert default_metrics("check") == ("context_relevance", "faithfulness", "answer_correctness")
    assert registry.METRICS == ORDER[:-1] and registry.RUBRIC_NAMES == ORDER


def test_the_prompt_set_version_is_computed_from_every_rubric(monkeypatch):
    version = registry.PROMPT_SET_VERSION
    assert re.fullmatch(r"[0-9a-f]{12}", version) and version == registry.prompt_set_version()
    edited = dict(builtin_metrics())
    old = edited["faithfulness"]
    edited["faithfulness"] = JudgeMetric(**{**old.__dict__, "prompts": Prompts(
        {lang: r.template + " " for lang, r in old.rubrics.items()}, version="2")})
    monkeypatch.setattr(registry, "_load_builtins", lambda: edited)
    assert registry.prompt_set_version() != version  # one space in one prompt is a new set


def _metric_modules() -> Dict[str, Path]:
    builtin.load()
    out = {}
    for path in sorted(Path(builtin.__file__).parent.glob("*.py")):
        if path.name != "__init__.py":
            module = sys.modules.get(f"{builtin.__name__}.{path.stem}")
            out[module.METRIC.name] = path.resolve()
    return out


def test_every_module_of_the_package_is_one_metric_with_its_definition():
    modules = _metric_modules()
    assert set(modules) == set(builtin_metrics())
    for name, path in modules.items():
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
        assert doc and doc.startswith(f"``{name}``:"), path  # the module's docstring is the metric's definition
        m = builtin_metrics()[name]
        assert isinstance(m.allowance, Allowance) and m.prompts is not None and m.source == "ragexam"


def _literals(tree: ast.AST) -> Iterator[Tuple[int, str]]:
    """The string constants of a module that are not documentation (docstrings), not Python names (``__all__``)
    and not command names (``app.command("name")``)."""
    skip = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list):
            skip.update(id(s.value) for s in body if isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            skip.update(id(e) for e in getattr(node.value, "elts", ()))
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "command" and node.args:
            skip.add(id(node.args[0]))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            yield node.lineno, node.value


def _names_it(text: str, name: str) -> bool:
    """``text`` is the metric's name, or (for a name no English prose uses: one with ``_``) holds it as a word
    outside a module path."""
    return text == name or ("_" in name and re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", text) is not None)


def test_a_built_in_metrics_name_is_written_in_its_own_module_only():
    """Outside tests and docs (docstrings, Markdown), no code names a built-in metric but its module: the others
    read it from the metric (``METRIC.name``) or from its fields (defaults, evidence twins, the label example)."""
    modules = _metric_modules()
    found: List[str] = []
    for path in sorted(SRC.rglob("*")):
        if not path.is_file() or path.suffix in (".md", ".pyc") or "__pycache__" in path.parts:
            continue
        if path.suffix == ".py":
            hits = [(line, text) for line, text in _literals(ast.parse(path.read_text(encoding="utf-8")))]
        elif path.suffix in (".html", ".js", ".css", ".json", ".txt", ".toml", ".yaml"):
            hits = list(enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1))
        else:
            continue
        for name, own in modules.items():
            if path.resolve() == own:
                continue
            found += [f"{path.relative_to(SRC)}:{line}: {text[:80]!r}" for line, text in hits if _names_it(text, name)
                      and (path.name, text) not in COMMANDS_NAMED_LIKE_A_METRIC]
    assert found == []


#: a command of the command line that has a built-in metric's name: ``ragexam pairwise`` (the command, not the
#: metric: its progress lines and the one line on Ctrl-C, ``cli_progress.LONG_COMMANDS``; the commands whose
#: ``--max-tokens`` is the judge's, ``cli_options.max_tokens_help``)
COMMANDS_NAMED_LIKE_A_METRIC = {("cli_progress.py", "pairwise"), ("cli_options.py", "pairwise")}


@pytest.fixture
def isolated_registry(monkeypatch):
    """A registry loaded afresh (and forgotten afterwards)."""
    monkeypatch.setattr(registry, "_REGISTRY", {})
    monkeypatch.setattr(registry, "_BUILTIN", {})


TOY = '''"""``numbers_kept``: does the answer keep the reference's numbers (1-3)?"""

from ragexam.metrics.judge.contract import Contract, Field, Levels
from ragexam.metrics.judge.metric import Allowance, JudgeMetric
from ragexam.metrics.judge.prompts import REASONING, Prompts
from ragexam.metrics.judge.replies import Verdict

METRIC = JudgeMetric(
    name="numbers_kept", question="does the answer keep the reference's numbers (1-3)",
    needs=("answer", "ground_truth"), applies_to="answerable", labels=("1", "2", "3"), score_range=(1.0, 3.0), unit_scale=(1, 2, 3), ordinal=True,
    prompts=Prompts({"en": "Numbers of {ground_truth} kept in {answer}?\\n{{\\"score\\": 1-3}}"}),
    contract=Contract((Field("score", Levels((1, 2, 3))), REASONING), score="score"),
    reader=lambda r, units: Verdict(float(r["score"]), str(r["score"]), dict(r)),
    stub=lambda x: {"score": 3, "reasoning": "stub"}, allowance=Allowance(base=40), order=65, default_for=("score",))
'''


def test_a_new_file_in_the_package_is_a_built_in_metric(tmp_path, monkeypatch, isolated_registry):
    (tmp_path / "numbers_kept.py").write_text(TOY, encoding="utf-8")
    monkeypatch.setattr(builtin, "__path__", [*builtin.__path__, str(tmp_path)])
    monkeypatch.delitem(sys.modules, f"{builtin.__name__}.numbers_kept", raising=False)
    try:
        names = list(builtin_metrics())
        assert names.index("numbers_kept") == names.index("answer_correctness") + 1  # its order: 65
        assert "numbers_kept" in metric_help() and "numbers_kept" in default_metrics("score")
        toy = registered()["numbers_kept"]
        assert toy.rubric("en").name.startswith("numbers_kept/en/vh")  # no version given: computed from the texts
    finally:
        sys.modules.pop(f"{builtin.__name__}.numbers_kept", None)


def test_a_computed_version_follows_the_texts_and_a_file_reads_like_inline_text(tmp_path):
    contract = Contract((Field("score", Levels((1, 2))), Field("reasoning", Text(200))), score="score")
    text = "Is {answer} polite?\n{\"score\": 1-2}"
    (tmp_path / "en.txt").write_text(text, encoding="utf-8")
    inline = Prompts({"en": text}).rubrics("polite", contract)["en"]
    from_file = Prompts({"en": tmp_path / "en.txt"}).rubrics("polite", contract)["en"]
    edited = Prompts({"en": text + "!"}).rubrics("polite", contract)["en"]
    assert (inline.name, inline.sha) == (from_file.name, from_file.sha)
    assert re.fullmatch(r"polite/en/vh[0-9a-f]{8}", inline.name) and edited.version != inline.version
    assert Prompts({"en": text}, version="3").rubrics("polite", contract)["en"].name == "polite/en/v3"
    with pytest.raises(ValueError, match="expected one or more of ko, en"):
        Prompts({"fr": text}).rubrics("polite", contract)


def test_a_metric_declared_without_its_contract_or_reader_says_what_is_missing():
    common = dict(name="x", question="q", needs=("answer",), applies_to="all", labels=(), score_range=(1.0, 2.0),
                  unit_scale=(1, 2), ordinal=False)
    with pytest.raises(ValueError, match="needs the reply contract"):
        JudgeMetric(**common, prompts=Prompts({"en": "{answer}"}), reader=lambda r, u: None)
    with pytest.raises(ValueError, match="give its reader"):
        JudgeMetric(**common, prompts=Prompts({"en": "{answer}"}),
                    contract=Contract((Field("score", Levels((1, 2))),), score="score"))
    with pytest.raises(ValueError, match="give its prompts"):
        JudgeMetric(**common, reader=lambda r, u: None)
