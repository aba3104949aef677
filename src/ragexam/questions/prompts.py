"""The question generator's prompts: versioned text files, hashed into every signature and cache key.

A prompt file (the bundled ones are ``prompt_files/questions.en.txt`` and ``prompt_files/questions.ko.txt``
next to this module: English and Korean *instructions*) is plain UTF-8 text:

* header lines ``# name: questions/en`` and ``# version: 2`` (other ``#`` lines before the first
  section are comments);
* sections, each starting with a line ``=== NAME``: ``system``, ``user``, ``avoid``,
  ``feedback invalid``, ``feedback truncated``, ``feedback refused``, one ``kind NAME`` per
  question kind (``meaning``, ``lexical``, ``multi``, ``out_of_corpus``, and any kind a user adds),
  and optionally ``language ko`` / ``language en`` (the name of an output language as the
  instructions write it), ``evidence spans`` / ``evidence sentences`` and ``format spans`` /
  ``format sentences`` (the evidence rule and the reply example of each citation mode).

Placeholders, filled in one pass (inputs are never re-scanned, so a passage containing ``{n}``
stays as it is): ``user`` -- ``{n}`` (questions asked for), ``{passages}`` (the passage blocks),
``{instructions}`` (the kind's section), ``{avoid}`` (the ``avoid`` section, or nothing on the
first request for a passage), ``{kind}``, ``{language}`` (the ``language <corpus language>``
section: the questions' language is the corpus's, whatever the instructions' language),
``{evidence}`` and ``{format}`` (the sections of the citation mode); ``kind out_of_corpus`` --
``{titles}``; ``avoid`` -- ``{questions}``, ``{request}``; ``evidence *``/``format *`` -- ``{kind}``;
``feedback *`` -- ``{error}``.  A prompt file of version 1 (no ``{language}``, ``{evidence}``,
``{format}``) still works in the ``spans`` citation mode.

Passages are given to the model as ``<passage id="DOC_ID">...</passage>`` blocks (a long
document's part adds ``part="2/3"``, a titled one ``title="..."``), so a user of a local model
can read exactly what it saw.  The text inside is the document content as is; in the
``sentences`` citation mode (``--cite sentences``) it is the section's sentences, one per line,
each preceded by its number ``[k]`` (numbers run on across the passages of a call).

The *reader* prompt (``prompt_files/reader.{en,ko}.txt``, same file format: ``system``, ``user``
with ``{question}`` ``{evidence}`` ``{language}`` ``{decline}``) asks a model to answer a generated
question from its evidence alone (:mod:`.llm_checks`).

:attr:`PromptSet.sha` is the SHA-256 (16 hex digits) of the file text (line endings normalised
to ``\\n``) plus the instructions of kinds added on the command line; it enters the question
set's signature and every generation cache key, so a changed prompt never reuses old replies.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from ragexam.errors import InputError
from ragexam.metrics.judge.metric import JudgeMetric

__all__ = ["PromptSet", "Passage", "load_prompts", "bundled_prompt_path", "REPLY_SCHEMA", "BUILTIN_KINDS",
           "render_passages", "reply_schema", "CITE_MODES", "ReaderPrompt", "load_reader", "FOCUS_SCHEMA",
           "FocusExample", "bundled_examples_path", "parse_examples", "DECLINE", "critic_path", "load_critic"]

#: what an answer that is not in the documents says: the ground truth of an out-of-corpus question (the sentence
#: ``ragexam answer``'s default prompt asks for) and the reader's decline sentence
DECLINE = {"ko": "문서에서 찾을 수 없습니다.", "en": "I cannot find this in the documents."}

#: the kinds every bundled prompt file defines, in the order of a mix
BUILTIN_KINDS: Tuple[str, ...] = ("meaning", "lexical", "multi", "out_of_corpus")

#: how the model cites its evidence: ``spans`` (copied text), ``sentences`` (numbers of shown sentences) or
#: ``focus`` (ragexam chooses the sentence, the model writes one question that it answers)
CITE_MODES: Tuple[str, ...] = ("spans", "sentences", "focus")
#: the sections ``--cite focus`` needs (besides ``system`` and a ``language`` section)
FOCUS_SECTIONS: Tuple[str, ...] = ("focus user", "focus this one", "focus this many", "focus sentence",
                                   "focus sentence many", "focus feedback invalid")
_FOCUS_NEEDS = ("{sentences}", "{instructions}")

_REQUIRED = ("system", "user", "avoid", "feedback invalid", "feedback truncated", "feedback refused")
_USER_NEEDS = ("{n}", "{passages}", "{instructions}")
_READER_REQUIRED = ("system", "user", "feedback")
_READER_NEEDS = ("{question}", "{evidence}", "{decline}")
_PLACEHOLDER = re.compile(r"\{(n|passages|instructions|avoid|kind|titles|questions|request|error|language|evidence|"
                          r"format|question|decline|document|sentences|this|k|text)\}")
_KIND_NAME = re.compile(r"^[a-z][a-z0-9_]{0,39}$")

#: JSON schema of a reply (OpenAI strict structured output); the parser also accepts extra keys.
REPLY_SCHEMA: Dict[str, object] = {
    "type": "object",
    "properties": {"questions": {"type": "array", "items": {
        "type": "object",
        "properties": {"question": {"type": "string"}, "answer": {"type": "string"},
                       "evidence": {"type": "array", "items": {"type": "string"}},
                       "type": {"type": "string"}},
        "required": ["question", "answer", "evidence", "type"],
        "additionalProperties": False}}},
    "required": ["questions"],
    "additionalProperties": False,
}


#: JSON schema of a ``--cite focus`` reply: one question and its answer (the evidence is the focus sentence)
FOCUS_SCHEMA: Dict[str, object] = {
    "type": "object",
    "properties": {"question": {"type": "string"}, "answer": {"type": "string"}},
    "required": ["question", "answer"],
    "additionalProperties": False,
}


@dataclass(frozen=True)
class FocusExample:
    """A worked ``--cite focus`` exchange (``focus_examples.LANG.jsonl``): the question's ``kind``, the
    ``sentences`` shown with their ``documents`` (a title each), and the reply: ``question``, ``answer``."""

    kind: str
    documents: Tuple[str, ...]
    sentences: Tuple[str, ...]
    question: str
    answer: str


def bundled_examples_path(language: str) -> Path:
    """The bundled worked exchanges of ``--cite focus`` for questions in ``language``."""
    return Path(__file__).with_name("prompt_files") / f"focus_examples.{language}.jsonl"


def parse_examples(text: str, source: str) -> Tuple[FocusExample, ...]:
    """The examples of a ``focus_examples`` file (JSON Lines; ``#`` lines are comments)."""
    out = []
    for no, line in enumerate(text.split("\n"), 1):
        if not line.strip() or line.startswith("#"):
            continue
        try:
            d = json.loads(line)
            ex = FocusExample(str(d["kind"]), tuple(map(str, d["documents"])), tuple(map(str, d["sentences"])),
                              str(d["question"]), str(d["answer"]))
        except (ValueError, KeyError, TypeError) as err:
            raise InputError(f"not a worked example ({err}); expected a JSON object with kind, documents, sentences, "
                             "question, answer", source=source, line=no) from None
        if not ex.sentences or len(ex.documents) != len(ex.sentences):
            raise InputError(f"an example needs one document title per sentence; received {len(ex.documents)} "
                             f"titles for {len(ex.sentences)} sentences", source=source, line=no, field="documents")
        out.append(ex)
    return tuple(out)


def reply_schema(numbers: Optional[Sequence[int]] = None) -> Dict[str, object]:
    """The reply schema: :data:`REPLY_SCHEMA`, or for the ``sentences`` citation mode the same with
    ``evidence`` a list of the shown sentence ``numbers`` (an ``enum``, so constrained decoding can only
    cite those)."""
    if numbers is None:
        return REPLY_SCHEMA
    item = json.loads(json.dumps(REPLY_SCHEMA["properties"]["questions"]["items"]))  # type: ignore[index]
    item["properties"]["evidence"] = {"type": "array", "items": {"type": "integer", "enum": list(numbers)}}
    return {"type": "object", "properties": {"questions": {"type": "array", "items": item}},
            "required": ["questions"], "additionalProperties": False}


def bundled_prompt_path(language: str, what: str = "questions") -> Path:
    """The bundled prompt file of instruction language ``language`` (``ko`` or ``en``); ``what`` is
    ``questions`` (the generator) or ``reader`` (the answerable-from-evidence check)."""
    return Path(__file__).with_name("prompt_files") / f"{what}.{language}.txt"


def _fill(template: str, values: Mapping[str, str]) -> str:
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), template)


@dataclass(frozen=True)
class Passage:
    """One block of text shown to the model: a document's ``doc_id``, its ``text`` (a section of the
    content), ``part``/``parts`` (1-based, for documents split into sections) and ``title``."""

    doc_id: str
    text: str
    part: int = 1
    parts: int = 1
    title: Optional[str] = None
    #: ``((number, sentence), ...)`` in the ``sentences`` citation mode: shown instead of ``text``
    numbered: Tuple[Tuple[int, str], ...] = ()

    def render(self) -> str:
        attrs = f'id="{_attr(self.doc_id)}"'
        if self.parts > 1:
            attrs += f' part="{self.part}/{self.parts}"'
        if self.title:
            attrs += f' title="{_attr(self.title)}"'
        body = "\n".join(f"[{k}] {' '.join(t.split())}" for k, t in self.numbered) if self.numbered else self.text
        return f"<passage {attrs}>\n{body}\n</passage>"


def _attr(text: str) -> str:
    return text.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace("\n", " ")


def render_passages(passages: Sequence[Passage]) -> str:
    """The ``<passage ...>`` blocks, separated by blank lines."""
    return "\n\n".join(p.render() for p in passages)


@dataclass(frozen=True)
class PromptSet:
    """A parsed prompt file (see the module docstring).  ``sections`` maps a section name to its text;
    ``extra_kinds`` are kinds added on the command line (name -> instruction)."""

    name: str
    version: str
    language: str
    source: str
    text: str = field(repr=False)
    sections: Mapping[str, str] = field(repr=False)
    extra_kinds: Mapping[str, str] = field(default_factory=dict, repr=False)
    #: output language -> the text of its ``--cite focus`` examples file (for a file with a ``focus user`` section)
    examples_text: Mapping[str, str] = field(default_factory=dict, repr=False)

    @property
    def sha(self) -> str:
        """SHA-256 (16 hex) of the file text, the added kinds and the focus examples."""
        parts: List[Any] = [self.text, sorted(self.extra_kinds.items())]
        if self.examples_text:
            parts.append(sorted(self.examples_text.items()))
        blob = json.dumps(parts, ensure_ascii=False)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]

    @property
    def label(self) -> str:
        """``questions/ko/v1@<sha>``: what the signature shows."""
        return f"{self.name}/v{self.version}@{self.sha}"

    @property
    def kinds(self) -> List[str]:
        """Every kind this prompt set can ask for, bundled kinds first."""
        own = [k[5:] for k in self.sections if k.startswith("kind ")]
        return list(dict.fromkeys(own + list(self.extra_kinds)))

    def instruction(self, kind: str, titles: Sequence[str] = ()) -> str:
        if kind in self.extra_kinds:
            text = f'{self.extra_kinds[kind]} (type: "{kind}")'
        else:
            text = self.sections.get("kind " + kind)
            if text is None:
                raise InputError(f"the prompt file has no section '=== kind {kind}'; it defines: "
                                 f"{', '.join(self.kinds)}", source=self.source, field="kind")
        return _fill(text, {"titles": ", ".join(titles)})

    def check(self, output_language: str, cite: str) -> None:
        """That this file can write questions in ``output_language`` with citation mode ``cite``:
        :class:`InputError` naming the missing section otherwise."""
        if cite == "focus":
            self._check_focus(output_language)
            return
        user = self.sections["user"]
        need = []
        if "{language}" in user:
            need.append("language " + output_language)
        if cite != "spans" or "{evidence}" in user or "{format}" in user:
            need += [f"evidence {cite}", f"format {cite}"]
            if "{evidence}" not in user or "{format}" not in user:
                raise InputError(f"--cite {cite} needs the placeholders {{evidence}} and {{format}} in the 'user' "
                                 "section (the evidence rule and reply example of the citation mode)",
                                 source=self.source, field="user")
        missing = [n for n in need if n not in self.sections]
        if missing:
            raise InputError(f"the prompt file has no section {', '.join('=== ' + m for m in missing)}; it is needed "
                             f"for questions in {output_language!r} with --cite {cite}", source=self.source,
                             field="section")

    def _check_focus(self, output_language: str) -> None:
        missing = [n for n in FOCUS_SECTIONS if n not in self.sections]
        if "{language}" in self.sections.get("focus user", "") and "language " + output_language not in self.sections:
            missing.append("language " + output_language)
        if missing:
            raise InputError(f"the prompt file has no section {', '.join('=== ' + m for m in missing)}; --cite focus "
                             f"needs {', '.join('=== ' + m for m in FOCUS_SECTIONS)}", source=self.source,
                             field="section")
        lacks = [p for p in _FOCUS_NEEDS if p not in self.sections["focus user"]]
        if lacks:
            raise InputError(f"the 'focus user' section lacks {', '.join(lacks)}", source=self.source, field="user")
        if not self.examples(output_language):
            raise InputError(f"no worked examples for questions in {output_language!r}: --cite focus shows some "
                             f"before each request; expected {bundled_examples_path(output_language)}",
                             source=self.source, field="examples")

    def examples(self, language: str, kind: Optional[str] = None) -> Tuple[FocusExample, ...]:
        """The worked ``--cite focus`` exchanges for questions in ``language``: of ``kind`` when given (a kind
        without examples of its own gets the ``meaning`` ones)."""
        text = self.examples_text.get(language)
        if not text:
            return ()
        every = parse_examples(text, str(bundled_examples_path(language)))
        if kind is None:
            return every
        own = tuple(e for e in every if e.kind == kind)
        return own or tuple(e for e in every if e.kind == "meaning")

    def _focus_user(self, kind: str, documents: Sequence[str], sentences: Sequence[str], language: str) -> str:
        if len(sentences) == 1:
            shown = _fill(self.sections["focus sentence"], {"text": " ".join(sentences[0].split()), "k": "1",
                                                           "document": documents[0]})
        else:
            shown = "\n".join(_fill(self.sections["focus sentence many"],
                                    {"text": " ".join(t.split()), "k": str(i), "document": d})
                              for i, (d, t) in enumerate(zip(documents, sentences), 1))
        if kind in self.extra_kinds:
            instructions = self.extra_kinds[kind]
        else:
            instructions = self.sections.get("focus kind " + kind) or self.instruction(kind)
        this = self.sections["focus this one" if len(sentences) == 1 else "focus this many"]
        return _fill(self.sections["focus user"], {
            "document": "; ".join(dict.fromkeys(documents)), "sentences": shown, "instructions": instructions,
            "language": self.sections.get("language " + language, language), "this": this, "kind": kind})

    def focus_messages(self, kind: str, documents: Sequence[str], sentences: Sequence[str], *,
                       language: str = "ko") -> List[Dict[str, str]]:
        """The messages of one ``--cite focus`` call: the system message, the worked examples of ``kind`` as
        earlier user/assistant turns, then the request for one question that ``sentences`` (from the documents
        titled ``documents``, one title each) answer."""
        out = [{"role": "system", "content": self.sections["system"]}]
        for ex in self.examples(language, kind):
            out.append({"role": "user", "content": self._focus_user(kind, ex.documents, ex.sentences, language)})
            out.append({"role": "assistant", "content": json.dumps({"question": ex.question, "answer": ex.answer},
                                                                   ensure_ascii=False)})
        out.append({"role": "user", "content": self._focus_user(kind, documents, sentences, language)})
        return out

    def messages(self, kind: str, passages: Sequence[Passage], n: int, *, titles: Sequence[str] = (),
                 avoid: Sequence[str] = (), request: int = 1, language: str = "ko",
                 cite: str = "spans") -> List[Dict[str, str]]:
        """The ``[system, user]`` messages of one generation call: questions in ``language`` (the
        corpus's), evidence cited as ``cite`` (:data:`CITE_MODES`)."""
        avoid_text = ""
        if avoid:
            avoid_text = "\n\n" + _fill(self.sections["avoid"], {"questions": "\n".join(f"- {q}" for q in avoid),
                                                         "request": str(request)})
        values = {"n": str(n), "passages": render_passages(passages), "instructions": self.instruction(kind, titles),
                  "avoid": avoid_text, "kind": kind, "language": self.sections.get("language " + language, language)}
        for part in ("evidence", "format"):
            values[part] = _fill(self.sections.get(f"{part} {cite}", ""), {"kind": kind})
        user = _fill(self.sections["user"], values)
        return [{"role": "system", "content": self.sections["system"]}, {"role": "user", "content": user}]

    def feedback(self, which: str, error: str = "", *, cite: str = "spans") -> str:
        """The follow-up message after an unusable reply (``invalid``, ``truncated``, ``refused``); with
        ``cite="focus"`` the ``focus feedback invalid`` section for an invalid reply."""
        if cite == "focus" and which == "invalid":
            return _fill(self.sections["focus feedback invalid"], {"error": error})
        return _fill(self.sections["feedback " + which], {"error": error})


def _parse(text: str, source: str, required: Sequence[str] = _REQUIRED,
           needs: Sequence[str] = _USER_NEEDS) -> Tuple[Dict[str, str], Dict[str, str]]:
    header: Dict[str, str] = {}
    sections: Dict[str, List[str]] = {}
    lines: Dict[str, int] = {}
    current: Optional[str] = None
    for no, line in enumerate(text.split("\n"), 1):
        if line.startswith("=== "):
            current = " ".join(line[4:].split())
            if current in sections:
                raise InputError(f"section '=== {current}' appears twice (first on line {lines[current]})",
                                 source=source, line=no, field="section")
            sections[current] = []
            lines[current] = no
            continue
        if current is None:
            m = re.match(r"^#\s*(name|version)\s*:\s*(\S.*?)\s*$", line)
            if m:
                header[m.group(1)] = m.group(2)
            elif line.strip() and not line.startswith("#"):
                raise InputError(f"text before the first section: {line[:60]!r}; expected '# name: ...', "
                                 "'# version: ...', comments, then sections starting with '=== NAME'",
                                 source=source, line=no)
            continue
        sections[current].append(line)
    out = {}
    for name, body in sections.items():
        while body and not body[0].strip():
            body.pop(0)
        while body and not body[-1].strip():
            body.pop()
        if name.startswith("kind ") and not _KIND_NAME.match(name[5:]):
            raise InputError(f"kind name {name[5:]!r}: expected lower-case letters, digits and '_' (starting "
                             "with a letter)", source=source, line=lines[name], field="section")
        out[name] = "\n".join(body)
    for name in required:
        if name not in out:
            raise InputError(f"the prompt file has no section '=== {name}'; every prompt file of this kind needs "
                             f"{', '.join('=== ' + n for n in required)}"
                             + (" and '=== kind NAME' sections" if required is _REQUIRED else ""),
                             source=source, field="section")
    missing = [p for p in needs if p not in out["user"]]
    if missing:
        raise InputError(f"the 'user' section lacks {', '.join(missing)}; expected all of "
                         f"{', '.join(needs)}", source=source, line=lines["user"], field="user")
    return header, out


def _read(p: Path) -> str:
    try:
        raw = p.read_text(encoding="utf-8")
    except OSError as err:
        raise InputError(f"cannot read the prompt file: {err.strerror or err}", source=str(p),
                         field="prompt") from None
    except UnicodeDecodeError:
        raise InputError("the prompt file is not valid UTF-8", source=str(p), field="prompt") from None
    return raw.replace("\r\n", "\n").replace("\r", "\n")


def load_prompts(language: str, path: Union[str, Path, None] = None,
                 extra_kinds: Optional[Mapping[str, str]] = None) -> PromptSet:
    """The prompt set for ``language`` (``ko``/``en``): the bundled file, or ``path``; ``extra_kinds``
    (name -> instruction) add kinds on top of the file's.

    :raises InputError: unreadable file, a missing section or placeholder, a bad kind name, or an
        added kind that the file already defines.
    """
    p = Path(path) if path is not None else bundled_prompt_path(language)
    source = str(p)
    text = _read(p)
    header, sections = _parse(text, source)
    extra = dict(extra_kinds or {})
    for name, instr in extra.items():
        if not isinstance(name, str) or not _KIND_NAME.match(name):
            raise InputError(f"kind name {name!r}: expected lower-case letters, digits and '_' (starting with a "
                             "letter), e.g. procedure", source="--kind", field="kind")
        if "kind " + name in sections:
            raise InputError(f"kind {name!r} is already defined by the prompt file; choose another name or edit "
                             "the file", source="--kind", field="kind")
        if not isinstance(instr, str) or not instr.strip():
            raise InputError(f"kind {name!r} has no instruction; expected NAME=INSTRUCTION, e.g. "
                             "procedure='asks how to carry out a multi-step procedure'", source="--kind",
                             field="kind")
    name = header.get("name") or (f"questions/{language}" if path is None else f"custom/{p.stem}")
    examples: Dict[str, str] = {}
    if "focus user" in sections:
        for lang in ("ko", "en"):
            ex = bundled_examples_path(lang)
            if ex.is_file():
                examples[lang] = _read(ex)
    return PromptSet(name, header.get("version", "0"), language, source, text, sections,
                     {k: v.strip() for k, v in extra.items()}, examples)


@dataclass(frozen=True)
class ReaderPrompt:
    """The reader prompt (see the module docstring): ``name``, ``version``, ``sha`` of the file text."""

    name: str
    version: str
    source: str
    text: str = field(repr=False)
    sections: Mapping[str, str] = field(repr=False)
    #: output language -> the text of its worked examples (``reader_examples.LANG.jsonl``)
    examples_text: Mapping[str, str] = field(default_factory=dict, repr=False)

    @property
    def sha(self) -> str:
        """SHA-256 (16 hex) of the file text and the worked examples."""
        blob = self.text if not self.examples_text else json.dumps([self.text, sorted(self.examples_text.items())],
                                                                   ensure_ascii=False)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]

    @property
    def label(self) -> str:
        return f"{self.name}/v{self.version}@{self.sha}"

    def examples(self, language: str) -> List[Tuple[str, List[str], Optional[str]]]:
        """The worked exchanges for questions in ``language``: (question, evidence, answer or ``None``: declines)."""
        out = []
        source = str(bundled_prompt_path(language, "reader_examples").with_suffix(".jsonl"))
        for no, line in enumerate(self.examples_text.get(language, "").split("\n"), 1):
            if not line.strip() or line.startswith("#"):
                continue
            try:
                d = json.loads(line)
                out.append((str(d["question"]), [str(e) for e in d["evidence"]],
                            None if d["answer"] is None else str(d["answer"])))
            except (ValueError, KeyError, TypeError) as err:
                raise InputError(f"not a worked example ({err}); expected a JSON object with question, evidence, "
                                 "answer", source=source, line=no) from None
        return out

    def _user(self, question: str, evidence: Sequence[str], language: str, decline: str) -> str:
        return _fill(self.sections["user"], {"question": question, "evidence": "\n".join(evidence), "decline": decline,
                                             "language": self.sections.get("language " + language, language)})

    def messages(self, question: str, evidence: Sequence[str], *, language: str, decline: str) -> List[Dict[str, str]]:
        """The messages asking for the answer to ``question`` from ``evidence`` alone: the system message, the
        worked examples of ``language`` as earlier turns (two of five decline: a different group, a case the
        text does not state -- without them the local 1.5B model declined 10 of 10 answerable questions in a
        sample, with them 3), then the request."""
        out = [{"role": "system", "content": self.sections["system"]}]
        for q, ev, a in self.examples(language):
            out += [{"role": "user", "content": self._user(q, ev, language, decline)},
                    {"role": "assistant", "content": decline if a is None else a}]
        out.append({"role": "user", "content": self._user(question, evidence, language, decline)})
        return out

    def feedback(self, error: str, *, decline: str) -> str:
        """The follow-up after an unusable reply (empty, cut off)."""
        return _fill(self.sections["feedback"], {"error": error, "decline": decline})


def load_reader(language: str) -> ReaderPrompt:
    """The bundled reader prompt with instructions in ``language`` (``ko``/``en``)."""
    p = bundled_prompt_path(language, "reader")
    text = _read(p)
    header, sections = _parse(text, str(p), _READER_REQUIRED, _READER_NEEDS)
    examples = {}
    for lang in ("ko", "en"):
        ex = Path(__file__).with_name("prompt_files") / f"reader_examples.{lang}.jsonl"
        if ex.is_file():
            examples[lang] = _read(ex)
    return ReaderPrompt(header.get("name", f"reader/{language}"), header.get("version", "0"), str(p), text, sections,
                        examples)


def critic_path(language: str) -> Path:
    """The bundled critic rubric with criteria in ``language``."""
    return Path(__file__).with_name("prompt_files") / f"critic.{language}.json"


def load_critic(language: str) -> JudgeMetric:
    """The critic rubric (a custom :class:`~ragexam.metrics.judge.JudgeMetric`)."""
    from ragexam.metrics.judge import load_rubric

    return load_rubric(critic_path(language))
