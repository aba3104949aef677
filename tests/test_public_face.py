"""The package's public face: the verbs come from one layer (``ragexam.api``), ``__all__`` is the lazy table's,
the kinds of argument are named once (``ragexam.types``) and the public signatures use those names, and ``score``
takes its settings as one typed request."""

from __future__ import annotations

import inspect

import pytest

import ragexam
from ragexam import api, types


def test_the_verbs_come_from_the_api():
    for verb in ("run", "grade", "score", "generate"):
        assert getattr(ragexam, verb) is getattr(api, verb), verb
        assert getattr(ragexam, verb).__module__ == "ragexam.api"


def test_all_is_the_lazy_table():
    assert ragexam.__all__ == ["__version__", *ragexam._LAZY]
    assert set(dir(ragexam)) >= set(ragexam.__all__)
    for name in ragexam.__all__:
        assert getattr(ragexam, name) is not None, name


@pytest.mark.parametrize("fn, params", [
    (api.run, {"corpus": "Optional[CorpusLike]", "qa": "QALike", "retrievers": "Optional[Retrievers]",
               "chunkers": "Optional[Chunkers]", "executor": "ExecutorLike"}),
    (api.grade, {"qa": "QALike", "corpus": "Optional[CorpusLike]"}),
    (api.score, {"qa": "Optional[QALike]", "answers": "PathLike"}),  # None: traced answers carry their questions
    (api.generate, {"corpus": "CorpusLike"}),
    (api.answer, {"qa": "Optional[QALike]", "corpus": "Optional[CorpusLike]", "executor": "ExecutorLike"}),
    (api.evidence_coverage, {"corpus": "CorpusLike", "qa": "QALike"}),
    (api.validate, {"corpus": "CorpusLike", "qa": "Optional[QALike]"}),
])
def test_public_signatures_name_their_kinds(fn, params):
    sig = inspect.signature(fn)
    for name, annotation in params.items():
        assert sig.parameters[name].annotation == annotation, (fn.__name__, name)
    for name in ("CorpusLike", "QALike", "RetrieverLike", "ChunkerLike", "ExecutorLike"):
        assert name in types.__all__


def test_the_kinds_describe_the_real_objects():
    from ragexam.data.loaders import load_corpus, load_qa
    from ragexam.exec.local import LocalExecutor
    from ragexam.retrieval.spec import parse_retriever

    corpus, qa = load_corpus("it_helpdesk"), load_qa("it_helpdesk")
    for obj, protocol in ((corpus, types.CorpusData), (qa, types.QAData),
                          (parse_retriever("bm25:whitespace"), types.RetrieverObject),
                          (LocalExecutor(1), types.ExecutorObject)):
        missing = [m for m in dir(protocol) if not m.startswith("_") and not hasattr(obj, m)]
        missing += [m for m in ("__len__", "__iter__", "__contains__", "__getitem__")
                    if m in protocol.__dict__ and not hasattr(obj, m)]
        assert not missing, (type(obj).__name__, missing)


def test_score_takes_at_most_twelve_parameters_and_its_settings_as_a_request():
    params = inspect.signature(api.score).parameters
    assert len(params) <= 12 and "request" in params
    assert api.ScoreRequest(miss_k=3).miss_k == 3
    with pytest.raises(TypeError):
        api.ScoreRequest(not_a_setting=1)
    with pytest.raises(TypeError):
        api.score("it_helpdesk", "it_helpdesk", record=False, not_a_setting=1)
