"""ragexam.plots: the report's pictures as matplotlib figures, with readable Korean labels."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ragexam
from ragexam.errors import InputError
from ragexam.report import plots


@pytest.fixture(scope="module")
def result():
    return ragexam.run("it_helpdesk", "it_helpdesk", retrievers=["bm25", "bm25:whitespace"], k=(1, 3, 5),
                       n_resamples=200, n_permutations=200, progress=False)


ATTRIBUTION = {"bm25 | paragraphs:400": {"어휘 질문": {"ok": 20, "retrieval_miss": 3, "generation_miss": 2},
                                          "의미 질문": {"ok": 15, "retrieval_miss": 9, "generation_miss": 4}}}


def _render(fig, path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fig.savefig(path, dpi=60)
    missing = [str(w.message) for w in caught if "missing from" in str(w.message)]
    return missing


def _ink(path) -> float:
    from matplotlib.image import imread

    img = imread(path)
    return float((img[..., :3] < 0.5).mean())


def test_every_plot_renders_with_korean_glyphs(result, tmp_path):
    assert plots.korean_font() is not None, "CI installs fonts-nanum; without a Korean font this test is moot"
    summary = dict(result.summary)
    summary["attribution"] = ATTRIBUTION
    figs = {"k_sweep": plots.k_sweep(result), "fbeta": plots.fbeta(result), "by_type": plots.by_type(result),
            "first_rank": plots.first_rank(result), "attribution": plots.attribution(summary)}
    for name, fig in figs.items():
        path = tmp_path / f"{name}.png"
        assert _render(fig, path) == [], name
        assert path.stat().st_size > 5_000 and _ink(path) > 0.002, name
    # the data drawn is the run's: first sweep line = P@K of the first pipeline
    line = figs["k_sweep"].axes[0].lines[0]
    sweep = result.summary["results"][result.baseline]["sweep"]
    assert list(line.get_xdata()) == [1, 3, 5]
    assert np.allclose(line.get_ydata(), [sweep[k]["p"] for k in ("1", "3", "5")])
    bars = figs["by_type"].axes[0].patches
    by_type = result.summary["results"][result.baseline]["by_type"]
    assert np.isclose(bars[0].get_height(), by_type[list(by_type)[0]]["hit@5"])
    # first-rank shares of one pipeline sum to 1
    fr_bars = figs["first_rank"].axes[0].patches
    n_labels = 12
    assert np.isclose(sum(b.get_height() for b in fr_bars[:n_labels]), 1.0)


def test_the_glyph_check_can_fail(tmp_path):
    """With a font that has no Hangul, matplotlib reports the missing glyphs, so the test above would fail."""
    from matplotlib.figure import Figure

    fig = Figure()
    fig.subplots().set_title("의미 질문", fontfamily="DejaVu Sans")
    assert _render(fig, tmp_path / "x.png")


def test_api_names_and_errors(result):
    assert ragexam.plots.k_sweep is plots.k_sweep and ragexam.plots.attribution is plots.attribution
    with pytest.raises(InputError, match="no stage attribution"):
        plots.attribution(result)
    with pytest.raises(InputError, match="per-type values"):
        plots.by_type(result, metric="nope@3")
    with pytest.raises(InputError, match="per-question rows"):
        plots.first_rank(result.summary)
    with pytest.raises(InputError, match="expected a RunResult"):
        plots.k_sweep([1, 2])
