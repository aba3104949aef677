"""Custom rubrics (G-Eval style): a rubric file becomes a judged metric with every guarantee of the
built-in ones -- versioned prompt whose hash is in every score's signature and in the cache key,
strict replies, unjudged with a reason, coverage, cache and resume, repeats, intervals.

The file (JSON, or YAML with ``pip install 'ragexam[yaml]'``)::

    name: politeness              # the metric's name: lowercase letters, digits, _ (not a built-in name)
    version: 1                    # yours to bump when you change the text on purpose (default 1)
    language: ko                  # ko or en: the language of your criteria; the judge's instructions follow it
    description: 답변이 공손한가    # optional, one line
    criteria: |                   # what to judge, in your words
      답변이 사내 고객을 대하는 말투로 공손하고 분명한지 평가합니다.
    steps:                        # optional evaluation steps (G-Eval's chain of thought, written once here
      - 답변의 말투를 확인합니다.      # rather than generated at run time, so the hash covers them)
      - 지시가 분명한지 봅니다.
    inputs: [question, answer]    # what the judge sees: question and any of answer, contexts, ground_truth
                                  # (default [question, answer])
    questions: all                # all | answerable | unanswerable: which questions `ragexam score` grades
    scale:                        # 2-10 integer levels, each with an anchored description
      1: 무례하거나 지시가 엉망이다
      2: ...
      5: 공손하고 지시가 분명하다
    pass: 4                       # optional: a score at or above this level passes (gives the pass rate)
    examples:                     # optional few-shot examples (their inputs are those of `inputs`)
      - question: 비밀번호를 바꾸려면?
        answer: 다온포털 > 내 정보에서 바꾸시면 됩니다.
        score: 5
        reasoning: 공손하고 경로가 분명하다.

The reply contract is ``{"score": one of the levels, "reasoning": str}`` (the JSON schema sent to the
endpoint says the same: an ``enum`` of the levels); anything else is fed back to the judge, quoting the
broken rule, and after ``max_attempts`` unjudged (``invalid_reply``).  With probability scoring the score is
the expected level over the levels' token probabilities (levels of one digit, 0-9; a scale with 10 or a
negative level is scored from the written level only).  The metric's score is the
level (its mean over judged items is reported), its label the level as text (so the canonical
verdict over repeats is the majority level, ties to the lower), and with ``pass`` its pass rate.

Everything in the file that reaches the judge -- name, version, criteria, steps, scale, examples,
inputs -- is rendered into the prompt, and the rubric's hash (``Rubric.sha``) covers the prompt and
the reply schema: editing a word changes the hash, the signature and the cache key.  Curly-brace
placeholders such as ``{answer}`` are refused in your text (ragexam inserts the inputs itself).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from ragexam.errors import InputError
from ragexam.storage.files import read_settings_file
from ragexam.metrics.judge import stubs
from ragexam.metrics.judge.contract import Contract, Field, Levels, Text
from ragexam.metrics.judge.metric import APPLIES_TO, Allowance, JudgeMetric
from ragexam.metrics.judge.registry import builtin_metrics
from ragexam.metrics.judge.prompts import SYSTEM, Rubric, format_contexts
from ragexam.metrics.judge.replies import level_reply

__all__ = ["load_rubric", "rubric_from_dict", "CUSTOM_INPUTS"]

#: The inputs a custom rubric may show the judge (``question`` always).
CUSTOM_INPUTS = ("question", "answer", "contexts", "ground_truth")
_NAME = re.compile(r"^[a-z][a-z0-9_]{0,39}$")
_PLACEHOLDER = re.compile(r"\{(question|contexts|answer|second_answer|ground_truth|n)\}")
_KEYS = {"name", "version", "language", "description", "criteria", "steps", "inputs", "questions", "scale", "pass",
         "examples"}

_TEXT = {
    "ko": {"intro": "아래 평가 기준으로 채점하세요.", "criteria": "평가 기준", "steps": "평가 순서", "scale": "점수",
           "examples": "채점 예시", "example": "예시", "score": "점수", "reasoning": "근거",
           "question": "질문", "answer": "답변", "contexts": "검색된 컨텍스트", "ground_truth": "정답",
           "format": "응답 형식 (JSON)", "levels": '"score"는 {levels} 중 하나의 정수입니다.',
           "reply": '{"score": 점수, "reasoning": "판단 근거"}', "valid": "반드시 유효한 JSON만 출력하세요.",
           "grade": "채점할 자료"},
    "en": {"intro": "Grade the material below by the criteria.", "criteria": "Criteria", "steps": "Evaluation steps",
           "scale": "Scale", "examples": "Graded examples", "example": "Example", "score": "Score",
           "reasoning": "Reasoning", "question": "Question", "answer": "Answer", "contexts": "Retrieved contexts",
           "ground_truth": "Reference answer", "format": "Response format (JSON)",
           "levels": '"score" is one integer of {levels}.', "reply": '{"score": score, "reasoning": "why"}',
           "valid": "Output valid JSON only.", "grade": "Material to grade"},
}


def _fail(source: str, field: str, msg: str) -> InputError:
    return InputError(msg, source=source, field=field)


def _text(value: Any, source: str, field: str, *, required: bool = True) -> Optional[str]:
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise _fail(source, field, f"received {value!r}; expected non-empty text")
    m = _PLACEHOLDER.search(value)
    if m:
        raise _fail(source, field, f"contains the placeholder {m.group(0)!r}; ragexam inserts the inputs itself: "
                                   f"write the word (e.g. 'the answer') instead of {m.group(0)}")
    return value.strip()


def _scale(value: Any, source: str) -> Dict[int, str]:
    if isinstance(value, list):
        items: List[Tuple[Any, Any]] = []
        for i, entry in enumerate(value, 1):
            if not isinstance(entry, Mapping) or set(entry) - {"score", "description"} or "score" not in entry:
                raise _fail(source, f"scale[{i}]", f"received {entry!r}; expected {{score: N, description: text}}")
            items.append((entry["score"], entry.get("description")))
    elif isinstance(value, Mapping):
        items = list(value.items())
    else:
        raise _fail(source, "scale", f"received {value!r}; expected a mapping level -> description, e.g. "
                                     "{1: 'bad', 2: 'fair', 3: 'good'}")
    out: Dict[int, str] = {}
    for k, desc in items:
        level = k
        if isinstance(k, str) and re.fullmatch(r"-?\d+", k.strip()):
            level = int(k)
        if isinstance(level, bool) or not isinstance(level, int):
            raise _fail(source, "scale", f"level {k!r} is not an integer; expected integer levels such as 1-5")
        if level in out:
            raise _fail(source, "scale", f"level {level} is given twice")
        out[level] = _text(desc, source, f"scale.{level}")  # type: ignore[assignment]
    if not 2 <= len(out) <= 10:
        raise _fail(source, "scale", f"has {len(out)} levels; expected 2 to 10 anchored levels")
    return dict(sorted(out.items()))


def _examples(value: Any, inputs: Sequence[str], levels: Sequence[int], source: str) -> List[Dict[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _fail(source, "examples", f"received {type(value).__name__}; expected a list of examples")
    out = []
    for i, ex in enumerate(value, 1):
        where = f"examples[{i}]"
        if not isinstance(ex, Mapping):
            raise _fail(source, where, f"received {ex!r}; expected a mapping with {', '.join(inputs)}, score")
        extra = set(ex) - set(inputs) - {"score", "reasoning"}
        if extra:
            raise _fail(source, where, f"has {', '.join(sorted(extra))}, which the rubric's inputs "
                                       f"({', '.join(inputs)}) do not include")
        e: Dict[str, Any] = {}
        for name in inputs:
            if name == "contexts":
                ctx = ex.get("contexts")
                if not isinstance(ctx, list) or not ctx or not all(isinstance(c, str) for c in ctx):
                    raise _fail(source, f"{where}.contexts", f"received {ctx!r}; expected a list of texts")
                e["contexts"] = [_text(c, source, f"{where}.contexts") for c in ctx]
            else:
                e[name] = _text(ex.get(name), source, f"{where}.{name}")
        score = ex.get("score")
        if isinstance(score, bool) or not isinstance(score, int) or score not in levels:
            raise _fail(source, f"{where}.score", f"received {score!r}; expected one of the levels "
                                                  f"{', '.join(map(str, levels))}")
        e["score"] = score
        e["reasoning"] = _text(ex.get("reasoning"), source, f"{where}.reasoning", required=False)
        out.append(e)
    return out


def _template(spec: Mapping[str, Any], language: str) -> str:
    t = _TEXT[language]
    parts = [t["intro"], "", f"## {t['criteria']}: {spec['name']}", spec["criteria"]]
    if spec["steps"]:
        parts += ["", f"## {t['steps']}"] + [f"{i}. {s}" for i, s in enumerate(spec["steps"], 1)]
    parts += ["", f"## {t['scale']}"] + [f"- {lv} : {d}" for lv, d in spec["scale"].items()]
    for i, ex in enumerate(spec["examples"], 1):
        if i == 1:
            parts += ["", f"## {t['examples']}"]
        parts += ["", f"### {t['example']} {i}"]
        for name in spec["inputs"]:
            val = format_contexts(ex["contexts"], language) if name == "contexts" else ex[name]
            parts += [f"{t[name]}:", val]
        if ex.get("reasoning"):
            parts += [f"{t['reasoning']}: {ex['reasoning']}"]
        parts += [f"{t['score']}: {ex['score']}"]
    parts += ["", f"# {t['grade']}"]
    for name in spec["inputs"]:
        parts += ["", f"## {t[name]}", "{" + name + "}"]
    levels = ", ".join(map(str, spec["scale"]))
    parts += ["", f"## {t['format']}", t["reply"], t["levels"].replace("{levels}", levels), "", t["valid"]]
    return "\n".join(parts)


def rubric_from_dict(data: Mapping[str, Any], *, source: str = "rubric") -> JudgeMetric:
    """A :class:`~ragexam.metrics.judge.metric.JudgeMetric` from a parsed rubric file (see the module
    docstring); ``InputError`` naming the file and field for anything malformed."""
    if not isinstance(data, Mapping):
        raise _fail(source, "(file)", f"received a {type(data).__name__}; expected a mapping with name, criteria, "
                                      "scale")
    unknown = set(data) - _KEYS
    if unknown:
        raise _fail(source, sorted(unknown)[0], f"unknown field(s) {', '.join(sorted(unknown))}; expected some of "
                                                f"{', '.join(sorted(_KEYS))}")
    name = data.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise _fail(source, "name", f"received {name!r}; expected a lowercase name of letters, digits and _ "
                                    "starting with a letter (at most 40), e.g. politeness")
    if name in builtin_metrics():
        raise _fail(source, "name", f"{name!r} is a built-in metric; choose another name")
    version = data.get("version", 1)
    if isinstance(version, bool) or not isinstance(version, (int, str)) or not str(version).strip() or \
            not re.fullmatch(r"[A-Za-z0-9._-]+", str(version).strip()):
        raise _fail(source, "version", f"received {version!r}; expected a version such as 1 or 2.1")
    language = data.get("language")
    if language not in ("ko", "en"):
        raise _fail(source, "language", f"received {language!r}; expected ko or en (the language of the criteria)")
    inputs = data.get("inputs", ["question", "answer"])
    if not isinstance(inputs, list) or not inputs or not all(isinstance(i, str) for i in inputs):
        raise _fail(source, "inputs", f"received {inputs!r}; expected a list of {', '.join(CUSTOM_INPUTS)}")
    bad = [i for i in inputs if i not in CUSTOM_INPUTS]
    if bad or len(set(inputs)) != len(inputs):
        raise _fail(source, "inputs", f"received {inputs!r}; expected distinct names of {', '.join(CUSTOM_INPUTS)}")
    inputs = ["question"] + [i for i in CUSTOM_INPUTS[1:] if i in inputs]
    questions = data.get("questions", "all")
    if questions not in APPLIES_TO:
        raise _fail(source, "questions", f"received {questions!r}; expected one of {', '.join(APPLIES_TO)}")
    steps = data.get("steps") or []
    if not isinstance(steps, list):
        raise _fail(source, "steps", f"received {type(steps).__name__}; expected a list of steps")
    scale = _scale(data.get("scale"), source)
    levels = tuple(scale)
    pass_level = data.get("pass")
    if pass_level is not None and (isinstance(pass_level, bool) or not isinstance(pass_level, int)
                                   or pass_level not in levels):
        raise _fail(source, "pass", f"received {pass_level!r}; expected one of the levels {', '.join(map(str, levels))}")
    spec = {"name": name, "criteria": _text(data.get("criteria"), source, "criteria"),
            "steps": [_text(s, source, f"steps[{i}]") for i, s in enumerate(steps, 1)],
            "scale": scale, "inputs": inputs,
            "examples": _examples(data.get("examples"), inputs, levels, source)}
    description = _text(data.get("description"), source, "description", required=False)
    contract = Contract((Field("score", Levels(levels)), Field("reasoning", Text(200))), score="score")
    rubric = Rubric(name, language, str(version).strip(), SYSTEM[language], _template(spec, language), contract)
    pass_rule = None
    pass_text = None
    if pass_level is not None:
        pass_rule = (lambda s, lab, d, _p=pass_level: s >= _p)
        pass_text = f"score >= {pass_level}"
    return JudgeMetric(
        name=name, question=description or spec["criteria"].splitlines()[0][:120],
        needs=tuple(i for i in inputs if i != "question"), applies_to=questions,
        labels=tuple(str(lv) for lv in levels), score_range=(float(levels[0]), float(levels[-1])),
        unit_scale=levels, ordinal=len(levels) > 2, rubrics={language: rubric}, reader=level_reply,
        pass_rule=pass_rule, pass_text=pass_text, unit_rule=None, custom=True, source=source,
        allowance=Allowance(base=80),
        stub=stubs.custom)


def load_rubric(path: Union[str, Path]) -> JudgeMetric:
    """Read a rubric file (``.json``, or ``.yaml``/``.yml`` with PyYAML) into a judge metric."""
    source = str(Path(path))
    data = read_settings_file(path, what="rubric file", suffixes=(".json", ".yaml", ".yml"), field="--rubric",
                              see=" (see docs/judge.md)")
    return rubric_from_dict(data, source=source)
