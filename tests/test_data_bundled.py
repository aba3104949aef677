"""The bundled question sets validate cleanly and are addressable by name."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ragexam.data import BUNDLED, dataset_info, load_corpus, load_qa, validate


@pytest.mark.parametrize("name", sorted(BUNDLED))
def test_bundled_set_validates(name):
    report = validate(name, name)
    assert report.problems == [], "\n".join(map(str, report.problems))
    assert report.ok and report.documents > 0 and report.questions > 0


@pytest.mark.parametrize("name", sorted(BUNDLED))
def test_bundled_set_info(name):
    info = dataset_info(name)
    assert info.available
    corpus = load_corpus(name)
    qa = load_qa(name, corpus=corpus)
    assert (info.docs, info.questions) == (len(corpus), len(qa))
    assert sum(info.types.values()) == len(qa)
    for kind, path in info.files.items():
        assert path.endswith(f"{name}/{kind}.jsonl")


def test_import_is_cheap_and_layered():
    code = ("import sys, ragexam.data, ragexam.data.loaders, ragexam.data.validation, "
            "ragexam.data.relevance, ragexam.data.chunking\n"
            "bad = [m for m in ('kiwipiepy', 'numpy', 'pandas', 'ragexam.retrieval', 'ragexam.metrics', "
            "'ragexam.analysis', 'ragexam.report', 'ragexam.cli') if m in sys.modules]\n"
            "print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
