"""Messages that say where the problem is: the config file that holds a wrongly typed value, the shape
expected of a QA line (issue 9)."""

from __future__ import annotations

import pytest

from ragexam.analysis.exam.config import load_config_file
from ragexam.data.validation import validate
from ragexam.errors import InputError


@pytest.mark.parametrize("text, field", [('k = "five"\n', "k"), ("miss_k = 2.5\n", "miss_k"),
                                         ("seed = true\n", "seed"), ("depth = -1\n", "depth"),
                                         ('overlap = "half"\n', "overlap"), ("ignore_punctuation = 1\n",
                                                                            "ignore_punctuation")])
def test_config_value_errors_name_the_config_file(tmp_path, text, field):
    cfg = tmp_path / "run.toml"
    cfg.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as e:
        load_config_file(cfg)
    assert e.value.source == str(cfg)
    assert e.value.field == field


def test_yaml_config_value_errors_name_the_file(tmp_path):
    cfg = tmp_path / "run.yaml"
    cfg.write_text("miss_k: five\n", encoding="utf-8")
    with pytest.raises(InputError) as e:
        load_config_file(cfg)
    assert e.value.source == str(cfg) and e.value.field == "miss_k"


def test_good_config_values_are_normalized(tmp_path):
    cfg = tmp_path / "run.toml"
    cfg.write_text('k = "1,3"\nmiss_k = 3\nretrievers = ["bm25"]\n', encoding="utf-8")
    assert load_config_file(cfg) == {"k": (1, 3), "miss_k": 3, "retrievers": ["bm25"]}


def test_a_qa_line_that_is_not_an_object_gets_a_qa_hint(tmp_path):
    qa = tmp_path / "qa.jsonl"
    qa.write_text("[1, 2]\n", encoding="utf-8")
    report = validate("it_helpdesk", str(qa))
    msgs = [str(p) for p in report.problems if p.kind == "not_an_object"]
    assert len(msgs) == 1 and '"query_id"' in msgs[0] and '{"doc_id"' not in msgs[0]
