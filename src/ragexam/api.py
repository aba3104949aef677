"""One Python function per ``ragexam`` command: what the command line does, for scripts and notebooks.

Each command of :mod:`ragexam.cli` parses its options, calls exactly one function here, and renders what
it returns; Python users call the same functions and get the same objects.  Output paths are checked before
any retrieval, embedding or model call (:mod:`ragexam.storage.paths`), so a bad ``out``/``report`` fails in a
second instead of after the paid work.

=========================  ===================================================================================
command                    function
=========================  ===================================================================================
``evaluate``               :func:`evaluate_trec` → :class:`~ragexam.metrics.ranking.RankingResult`
``validate``               :func:`ragexam.data.validation.validate`
``datasets``               :func:`ragexam.data.catalog.list_datasets`
``evidence-coverage``      :func:`evidence_coverage` → :class:`Coverage`
``bleu`` / ``chrf``        :func:`text_metric_files`
``run`` / ``demo``         :func:`run_exam` → :class:`RunOutcome` (``demo``: :data:`DEMO_SETTINGS`)
(Python)                   :func:`run`, :func:`grade` → :class:`~ragexam.analysis.exam.run.RunResult`
``report``                 :func:`write_run_report`
``runs``                   :func:`list_runs`
``show``                   :func:`ragexam.storage.history.resolve_run`
``compare``                :func:`compare`
``check``                  :func:`check`
``score``                  :func:`score` → :class:`ScoreOutcome`
``answer``                 :func:`answer` → :class:`AnswerOutcome`
``judge-agreement``        :func:`judge_agreement` → :class:`AgreementOutcome`
``generate``               :func:`generate` → :class:`~ragexam.questions.products.GenerateResult`
                           (``--dry-run``: :func:`generate_plan` → :class:`~ragexam.questions.products.GeneratePlan`)
``review apply``           :func:`ragexam.questions.review.apply_review`
``traces import``          :func:`import_traces` → :class:`~ragexam.analysis.answers.traces.ImportResult`
``traces sample``          :func:`sample_traces` → :class:`~ragexam.questions.traces_sample.SampleResult`
``locate-evidence``        :func:`locate_evidence` → :class:`~ragexam.questions.locate_set.LocateResult`
                           (``--dry-run``: a :class:`~ragexam.llm.batch.CallPlan`)
=========================  ===================================================================================
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from ragexam.errors import InputError, audience, command, integer_in, judge_needed, names, option, setting
from ragexam.types import Chunkers, CorpusLike, ExecutorLike, PathLike, QALike, RetrievedLike, Retrievers, options_from

if TYPE_CHECKING:
    from ragexam.analysis.answers.files import AnswerRecord
    from ragexam.data.evidence import Coverage
    from ragexam.analysis.answers.options import ScoreOptions
    from ragexam.analysis.answers.rows import AnswerRow
    from ragexam.analysis.judging.check import JudgeCheck
    from ragexam.analysis.exam.run import RunResult
    from ragexam.analysis.answers.scored import ScoreReport
    from ragexam.llm.settings import LLMSettings
    from ragexam.questions.config import GenerateConfig
    from ragexam.metrics.judge import Judge, JudgeMetric, JudgePlan, JudgeRun
    from ragexam.storage.runfolder import RunData

__all__ = ["run", "grade", "evaluate_trec", "DEFAULT_EVAL_METRICS", "pairwise", "Coverage", "evidence_coverage", "text_metric_files",
           "DEMO_SETTINGS", "RunOutcome", "run_exam", "write_run_report", "list_runs", "compare", "check",
           "ScoreOutcome", "score", "AnswerOutcome", "answer", "JudgeAsking", "AgreementOutcome", "judge_agreement",
           "read_segments", "generate", "generate_plan", "review_apply", "review_audit", "review_queue",
           "check_junk", "import_traces", "sample_traces", "locate_evidence"]

Progress = Optional[Callable[[int, int], None]]


def __getattr__(name: str) -> type:
    """``Coverage`` (what :func:`evidence_coverage` returns) lives with the evidence index
    (:class:`ragexam.data.evidence.Coverage`); it is imported when it is asked for, as every heavy import here."""
    if name == "Coverage":
        from ragexam.data.evidence import Coverage

        return Coverage
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

#: the metrics ``ragexam evaluate`` reports when none are asked for
#: the completion limit of an answer when none is given (``ragexam answer --max-tokens``)
ANSWER_MAX_TOKENS = 512
DEFAULT_EVAL_METRICS = ("hit@1", "hit@3", "mrr", "ndcg@10", "p@5", "r@5", "f1@5", "rprec", "map")


# -- grading pipelines (ragexam.run, ragexam.grade) ------------------------------------------------------------


def run(corpus: Optional[CorpusLike], qa: QALike, retrievers: Optional[Retrievers] = None,
        chunkers: Optional[Chunkers] = None, *, retrieved: Optional[RetrievedLike] = None,
        executor: ExecutorLike = None, llm: Optional[LLMSettings] = None, **options: object) -> RunResult:
    """``ragexam.run``: grade every pipeline -- each retriever over each chunker, and each results file of
    ``retrieved`` -- on the question set ``qa`` of ``corpus``: ranking metrics with 95% intervals, paired
    comparisons, the missed questions.  ``executor``: where the work runs; ``llm``: the settings of an LLM reranker;
    ``chunkers`` default to ``paragraphs:400``; ``options``: the run's settings (``k``, ``miss_k``, ``depth``,
    ``relevance``, ``seed``, ``n_resamples``, ``cache_dir``, ``progress``, ...), see
    :func:`ragexam.analysis.exam.run.run`."""
    from ragexam.analysis.exam.run import run as run_pipelines

    if chunkers is not None:
        options["chunkers"] = chunkers
    return run_pipelines(corpus, qa, retrievers, retrieved=retrieved, executor=executor, llm=llm, **options)


def grade(qa: QALike, retrieved: RetrievedLike, *, corpus: Optional[CorpusLike] = None, **options: object
          ) -> RunResult:
    """``ragexam.grade``: grade results files (``retrieved``: a path, a list of paths or loaded results) on the
    question set ``qa``, as :func:`run` without retrievers (:func:`ragexam.analysis.exam.run.grade`)."""
    from ragexam.analysis.exam.config import RUN_KEYWORDS
    from ragexam.analysis.exam.run import grade as grade_results
    from ragexam.types import check_keywords

    check_keywords([k for k in options if k not in ("retrievers", "chunkers")], RUN_KEYWORDS, "grade")  # names grade
    return grade_results(qa, retrieved, corpus=corpus, **options)


# -- ranking metrics on TREC files ----------------------------------------------------------------------------


def evaluate_trec(qrels: PathLike, run: PathLike, metrics: Optional[Sequence[str]] = None, *,
                  relevance_level: int = 1, trec_compat: bool = False):
    """Ranking metrics of a TREC run against TREC qrels (files or bundled names such as ``lecture``),
    identical to trec_eval; see :func:`ragexam.metrics.ranking.evaluate`."""
    from ragexam.data.trec import resolve_trec_path
    from ragexam.metrics.ranking import evaluate

    wanted = names(metrics, source="evaluate_trec", field="metrics", what="a metric name")
    return evaluate(resolve_trec_path(qrels, "qrels"), resolve_trec_path(run, "run"),
                    wanted or list(DEFAULT_EVAL_METRICS), relevance_level=relevance_level,
                    trec_compat=trec_compat)


# -- question sets --------------------------------------------------------------------------------------------


def evidence_coverage(corpus: CorpusLike, qa: QALike, chunker: Optional[str] = None, *,
                      ignore_punctuation: bool = False) -> Coverage:
    """Check that every evidence string of ``qa`` is inside one chunk of ``corpus`` chunked by ``chunker`` (any
    spec of :func:`ragexam.data.parse_chunker`; ``tokens:`` and ``semantic`` use e5; default: the run's,
    :data:`ragexam.data.chunking.DEFAULT_CHUNKER`, so the check predicts the run's ``evidence_split`` misses)."""
    from ragexam.data.chunking import chunk_corpus
    from ragexam.data.evidence import Coverage, EvidenceIndex
    from ragexam.data.evidence import evidence_coverage as _coverage
    from ragexam.data.loaders import load_corpus, load_qa
    from ragexam.retrieval.chunk_models import bind_chunker

    from ragexam.data.chunking import DEFAULT_CHUNKER

    spec = bind_chunker(chunker or DEFAULT_CHUNKER)  # tokens: counted in e5's tokenizer, semantic on the offline e5
    docs = load_corpus(corpus)
    questions = load_qa(qa, corpus=docs, ignore_punctuation=ignore_punctuation)
    index = EvidenceIndex.build(docs, chunk_corpus(docs, spec), ignore_punctuation=ignore_punctuation)
    return Coverage(index.signature, _coverage(questions, index))


# -- text metrics on parallel files ---------------------------------------------------------------------------


def read_segments(path: PathLike, role: str) -> List[str]:
    """One segment per line of a UTF-8 text file (a final newline ends the last line; a trailing ``\\r`` is
    dropped); ``role`` names the file in errors (``references``)."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as err:
        raise InputError(f"cannot read the {role} file: {err.strerror or err}.", source=str(p)) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise InputError(f"the {role} file is not valid UTF-8 (byte {err.start}); save it as UTF-8.",
                         source=str(p), line=line) from None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def text_metric_files(refs: PathLike, hyps: PathLike, metric: str, **options: object):
    """Corpus ``metric`` (``bleu`` or ``chrf``) of the hypotheses file against the parallel references file,
    with ``options`` of :func:`ragexam.metrics.text.corpus_bleu` / :func:`~ragexam.metrics.text.corpus_chrf`."""
    from ragexam.metrics.text import corpus_bleu, corpus_chrf

    ref_lines, hyp_lines = read_segments(refs, "references"), read_segments(hyps, "hypotheses")
    if len(ref_lines) != len(hyp_lines):
        raise InputError(f"line counts differ: references {refs} has {len(ref_lines)} lines, hypotheses {hyps} "
                         f"has {len(hyp_lines)}; the files must be parallel, one segment per line.",
                         source=f"{refs}, {hyps}")
    if metric not in ("bleu", "chrf"):
        raise InputError(f"received {metric!r}; expected 'bleu' or 'chrf'", source="text_metric_files",
                         field="metric")
    fn = corpus_bleu if metric == "bleu" else corpus_chrf
    return fn(hyp_lines, ref_lines, **options)


# -- question sets --------------------------------------------------------------------------------------------


def validate(corpus: CorpusLike, qa: Optional[QALike] = None, *, ignore_punctuation: bool = False,
             **options: object):
    """Check a corpus and a question set; every problem with file, line and field
    (:func:`ragexam.data.validation.validate`; ``options`` are its keywords)."""
    from ragexam.data.validation import validate as check

    return check(corpus, qa, ignore_punctuation=ignore_punctuation, **options)


def datasets():
    """The bundled question sets with their sizes (:func:`ragexam.data.catalog.list_datasets`)."""
    from ragexam.data.catalog import list_datasets

    return list_datasets()


def convert(to: str, out: PathLike, *, corpus: Optional[CorpusLike] = None, qa: Optional[QALike] = None,
            queries: Optional[PathLike] = None,
            split: Optional[str] = None, source_format: Optional[str] = None, locate: bool = True,
            semantic: bool = True):
    """Convert between ragexam JSONL, BEIR folders and TREC qrels (:func:`ragexam.data.convert.convert`), or a
    question set another tool made -- a RAGAS test set, DeepEval goldens, AutoRAG's parquet files
    (``source_format``, else recognised by its fields: :mod:`ragexam.data.foreign`) -- into ragexam's corpus and
    questions, their evidence located (``locate``; :func:`locate_evidence`).  ``out`` is checked before anything is
    read (never over an input)."""
    from ragexam.data.convert import convert as run_convert
    from ragexam.storage.paths import In, Out, check_outputs

    check_outputs([Out(out, "--out", "file" if to == "trec" else "folder")],
                  [In(corpus, "--corpus"), In(qa, "--qa"), In(queries, "--queries")])
    if qa is not None and queries is None:
        from ragexam.data.foreign import detect_format

        source_format = source_format or detect_format(qa)
    if source_format is not None:
        return _convert_foreign(to, out, corpus, qa, source_format, locate, semantic)
    return run_convert(to, out, corpus=corpus, qa=qa, queries=queries, split=split)


def _convert_foreign(to: str, out: PathLike, corpus: Optional[CorpusLike], qa: Optional[QALike], source_format: str,
                     locate: bool,
                     semantic: bool):
    """A RAGAS, DeepEval or AutoRAG set as ``out/corpus.jsonl`` and ``out/qa.jsonl`` (its evidence located: the
    card and review sheet next to it)."""
    import json

    from ragexam.data.convert import Converted, corpus_records, ragexam_record
    from ragexam.data.foreign import read_foreign
    from ragexam.data.schema import Corpus, QASet
    from ragexam.storage.runfolder import write_text

    if to != "ragexam":
        raise InputError(f"a {source_format} set converts to ragexam's files (--to ragexam), then to {to} from them",
                         source="convert", field="to")
    if qa is None:
        raise InputError(f"give the {source_format} question file as --qa", source="convert", field="qa")
    got = read_foreign(source_format, qa, corpus)
    target = Path(out)
    target.mkdir(parents=True, exist_ok=True)
    res = Converted("ragexam", n_documents=len(got.documents), n_questions=len(got.questions),
                    n_judgments=sum(len(q.grades) for q in got.questions), notes=list(got.notes))
    write_text(target / "corpus.jsonl", "".join(json.dumps(r, ensure_ascii=False) + "\n"
                                                for r in corpus_records(got.documents)))
    res.files.append(str(target / "corpus.jsonl"))
    if not locate:
        write_text(target / "qa.jsonl", "".join(json.dumps(ragexam_record(q), ensure_ascii=False) + "\n"
                                                for q in got.questions))
        res.files.append(str(target / "qa.jsonl"))
        res.notes.append("evidence not located (--no-locate): grade by document (--relevance doc), or run "
                         "`ragexam locate-evidence` on the files")
        return res
    from ragexam.questions.locate import LocateSettings
    from ragexam.questions.locate_set import locate_set, write_located

    corpus_obj = Corpus(got.documents, source=str(target / "corpus.jsonl"))
    located = locate_set(corpus_obj, QASet(got.questions, source=str(qa)), settings=LocateSettings(semantic=semantic))
    res.files.extend(str(p) for p in write_located(located, target / "qa.jsonl").values())
    c = located.counts
    res.notes.append(f"evidence located for {c['located']} of {located.searched} questions; "
                     + (f"{c['uncertain'] + c['unlocated']} without evidence (evidence_status): review "
                        f"{target / 'qa.review.csv'} or grade by document (--relevance doc)"
                        if c["uncertain"] + c["unlocated"] else "every question has evidence"))
    res.notes.extend(located.notes)
    return res


def run_settings(config: Optional[PathLike], flags: Mapping[str, Any]) -> Dict[str, Any]:
    """The settings of ``ragexam run``: the ``config`` file's (YAML or TOML), overridden by every flag given."""
    from ragexam.analysis.exam.config import load_config_file, merge_settings

    return merge_settings(load_config_file(config) if config is not None else {}, flags)


def show(run: str, history: Optional[PathLike] = None):
    """A recorded run or score (a history id, a unique prefix, ``latest``, or a run/score folder) as
    :class:`~ragexam.storage.runfolder.RunData`."""
    from ragexam.storage.history import resolve_run

    return resolve_run(run, history)


# -- retrieval runs -------------------------------------------------------------------------------------------

#: ``ragexam demo``: the bundled Korean helpdesk set, three retrievers and a rerank stage (offline: e5 rescoring
#: BM25's top 20), every other setting at its default
DEMO_SETTINGS: Mapping[str, Any] = {"corpus": "it_helpdesk", "qa": "it_helpdesk",
                                    "retrievers": ("bm25", "dense", "hybrid:bm25+dense", "bm25>rerank:dense")}


def pipeline_options(headers: Optional[Sequence[str]] = None, split: Optional[str] = None,
                     base_url: Optional[str] = None, api_key: Optional[str] = None,
                     price: Optional[str] = None) -> Dict[str, Any]:
    """The run keywords of the pipeline options: ``headers`` from ``"Name: value"`` strings (``--header``),
    the BEIR ``split``, and the :class:`~ragexam.llm.settings.LLMSettings` of ``rerank:llm`` stages (their model
    comes from the spec) when an endpoint, key or price is given; only the ones given."""
    out: Dict[str, Any] = {}
    if headers:
        parsed = {}
        for h in headers:
            name, colon, value = h.partition(":")
            if not colon or not name.strip():
                raise InputError(f"received {h.split(':', 1)[0][:30]!r}...; expected 'Name: value', e.g. "
                                 "'Authorization: Bearer ...'.", source="--header", field="header")
            parsed[name.strip()] = value.strip()
        out["headers"] = parsed
    if split is not None:
        out["split"] = split
    if base_url is not None or api_key is not None or price is not None:
        from ragexam.llm.cost import parse_price
        from ragexam.llm.settings import LLMSettings

        out["llm"] = LLMSettings("rerank", base_url=base_url, api_key=api_key, price=parse_price(price))
    return out


@dataclass
class RunOutcome:
    """What :func:`run_exam` did: the :class:`~ragexam.analysis.exam.run.RunResult`, the folder written
    (``out``), the history entry (``run_id`` in ``history_path``) and the HTML report written."""

    result: RunResult
    out: Optional[Path] = None
    run_id: Optional[str] = None
    history_path: Optional[Path] = None
    report_path: Optional[Path] = None
    #: why the run was not recorded in the history although recording was asked for (a pipeline produced nothing)
    not_recorded: Optional[str] = None

    def notes(self) -> List[str]:
        """One sentence per thing written (for the console)."""
        out = []
        if self.run_id is not None:
            out.append(f"Recorded as run {self.run_id} in {self.history_path} (ragexam show {self.run_id}).")
        if self.not_recorded is not None:
            out.append(f"Not recorded in the history: {self.not_recorded}.")
        if self.report_path is not None:
            out.append(f"Wrote the HTML report to {self.report_path}.")
        return out


def _check_outputs(*, out: Optional[PathLike] = None, out_kind: str = "run", report: Optional[PathLike] = None,
                   history: Optional[PathLike] = None, record: bool = True, inputs: Sequence[Tuple[str, Any]] = ()
                   ) -> None:
    """The output-path rule (:func:`ragexam.storage.paths.check_outputs`) for a command's ``--out`` (a folder of
    ``out_kind``, or a ``file``), ``--report`` and history, against its ``inputs`` (``(option, path)``)."""
    from ragexam.storage.paths import In, Out, check_outputs, history_path

    check_outputs([Out(out, "--out", out_kind), Out(report, "--report"),
                   Out((history or history_path()) if record else None, "--history")],
                  [In(_input_path(path), option) for option, path in inputs])


def _progress(progress: object, who: str) -> None:
    """``progress`` is ``None`` or a function ``progress(done, total)``; anything else (``True``, ``"no"``) is an
    :class:`InputError` (it would be called, or silently taken as a wish)."""
    if progress is not None and not callable(progress):
        raise InputError(f"received {progress!r}; expected None or a function progress(done, total).", source=who,
                         field="progress")


def _run_data(ref: object, param: str, history: Optional[PathLike] = None, *, folder: bool = False) -> RunData:
    """The run (or score) ``ref`` names: a :class:`~ragexam.analysis.exam.run.RunResult` (``ragexam.run(...)``) or a
    :class:`~ragexam.storage.runfolder.RunData` as it is, a folder (``folder``: only a folder), or else a recorded
    id; any other value is an :class:`InputError` naming ``param``."""
    import os

    if isinstance(ref, (str, os.PathLike)):
        if folder:
            from ragexam.storage.runfolder import read_run_folder

            return read_run_folder(ref)
        from ragexam.storage.history import resolve_run

        return resolve_run(ref, history)
    from ragexam.analysis.answers.stages import as_run_data
    from ragexam.storage.runfolder import RunData

    if isinstance(ref, RunData) or all(hasattr(ref, a) for a in ("summary", "per_question", "chunk_records")):
        return as_run_data(ref)  # type: ignore[return-value]
    raise InputError(f"received a {type(ref).__name__}; expected a run folder (a path)"
                     f"{'' if folder else ', a recorded run id'} or a RunResult (what ragexam.run returns).",
                     source=param, field=param)


def _input_path(ref: object) -> object:
    """The file a reference reads: a results file's path without its ``>rerank:`` stages; others as given."""
    if isinstance(ref, str) and ">rerank:" in ref and not Path(ref).exists():
        return ref.split(">rerank:", 1)[0]
    return ref


def run_exam(settings: Mapping[str, Any], *, out: Optional[PathLike] = None, report: Optional[PathLike] = None,
             history: Optional[PathLike] = None, record: bool = True, progress: bool = True) -> RunOutcome:
    """:func:`ragexam.run` with ``settings`` (the keys of :mod:`ragexam.analysis.exam.config`, e.g. from
    :func:`~ragexam.analysis.exam.config.load_config_file` merged with flags), then the run folder ``out``
    (docs/run-format.md), the history record (unless ``record=False``, or a pipeline produced nothing: then
    ``not_recorded`` says so) and the HTML ``report``.  Every output path is checked before the run starts."""
    from ragexam.analysis.exam.run import run as _run

    retrieved = settings.get("retrieved") or []
    _check_outputs(out=out, report=report, history=history, record=record, inputs=[
        ("--corpus", settings.get("corpus")), ("--qa", settings.get("qa")),
        *(("--retrieved", r) for r in ([retrieved] if isinstance(retrieved, (str, Path)) else retrieved))])
    settings = dict(settings)
    # the corpus is needed by ragexam's own retrievers only: run() says so, naming the retriever
    if settings.get("qa") is None:
        raise InputError("no qa given; pass --qa PATH_OR_NAME (or set qa in the --config file).",
                         source="ragexam run", field="qa")
    result = _run(settings.pop("corpus", None), settings.pop("qa"), progress=progress, **settings)
    outcome = RunOutcome(result, out=Path(out) if out is not None else None)
    if out is not None:
        result.save(out)
    failed = result.summary.failed_pipelines
    if record and failed:  # a run with a pipeline that produced nothing would become `latest`, all zeros
        outcome.not_recorded = ("pipeline " + ", ".join(map(repr, failed)) + " produced nothing, so the run is not "
                                "one to compare with (fix it and run again)")
    elif record:
        from ragexam.analysis.gating.history import record_run
        from ragexam.storage.history import History

        outcome.history_path = History(history).path
        before = result.summary.run_id
        outcome.run_id = record_run(result.summary, result.per_question, outcome.history_path)
        if out is not None and outcome.run_id != before:
            result.save(out)  # the id changed: keep summary.json in step with the history
    if report is not None:
        from ragexam.report.html import write_report

        outcome.report_path = write_report(result.summary, result.per_question, report)
    return outcome


# -- report and history ---------------------------------------------------------------------------------------


def write_run_report(run: str, out: Optional[PathLike] = None, *, answers: Optional[PathLike] = None,
                     history: Optional[PathLike] = None, lang: str = "en", notes: Optional[List[str]] = None) -> Path:
    """The self-contained HTML report of ``run`` (a run folder or a recorded id), written to ``out`` (default
    ``RUN/report.html`` for a folder, ``report-<id>.html`` for a recorded run) in ``lang`` (``en`` or ``ko``);
    returns its path.  ``answers`` of none of the run's questions are an error; answers only some of which are
    shown add a note to ``notes`` (:func:`ragexam.analysis.answers.files.answers_for_run`)."""
    from ragexam.report.i18n import language

    language(lang)  # checked before any work
    from ragexam.analysis.gating.history import with_ground_truth
    from ragexam.analysis.answers.files import answers_for_run, load_answers
    from ragexam.report.html import write_report
    from ragexam.storage.history import resolve_run
    from ragexam.storage.paths import In, Out, check_outputs

    inputs = [In(run, "`ragexam report`"), In(answers, "--answers")]
    check_outputs([Out(out, "--out")], inputs)
    data = resolve_run(run, history)
    if data.is_score:
        what = "a score folder" if Path(run).is_dir() else "a recorded score" + (
            f" ({data.run_id})" if data.run_id and data.run_id != run else "")
        scored = data.summary.scored_run or data.summary.used_settings.get("run")
        serve = f"`ragexam serve {run}`" if Path(run).is_dir() else "`ragexam serve` (the runs list has it)"
        raise InputError(f"is {what}, not a run; `ragexam report` takes a run. Fix: {serve} shows the score's page "
                         "(answers, judge, segments) in Korean or English (`--lang ko`); `ragexam score ... --report "
                         "FILE.html` writes it as a file, in English (with `--run DIR`: the run's report with the "
                         "answers)" + (f"; `ragexam report {scored} --lang {lang}` writes the report of the run it "
                                       "scored" if scored else "") + ".", source=str(run))
    if out is None:
        out = Path(data.source) / "report.html" if Path(run).is_dir() else Path(f"report-{data.run_id}.html")
        check_outputs([Out(out, "--out")], inputs)
    shown = answers_for_run(load_answers(answers), data, source=str(answers), notes=notes) \
        if answers is not None else None
    return write_report(with_ground_truth(data.summary), data.per_question, out, answers=shown, lang=lang)


def list_runs(history: Optional[PathLike] = None, limit: Optional[int] = None, *, record: Optional[PathLike] = None,
              delete: Optional[str] = None):
    """``(history, entries, messages)``: the history (after recording the run folder ``record`` and deleting
    the recorded id ``delete``, when given), its newest ``limit`` entries, and what was changed."""
    from ragexam.storage.history import History
    from ragexam.storage.runfolder import read_run_folder

    hist = History(history)
    messages = []
    if record is not None:
        data = read_run_folder(record)
        messages.append(f"recorded {hist.record_run(data.summary, data.per_question)}")
    if delete is not None:
        if not hist.delete(delete):
            raise InputError(f"has no run {delete!r}; `ragexam runs` lists the recorded ones.",
                             source=str(hist.path), field="--delete")
        messages.append(f"deleted {delete}")
    return hist, hist.list_runs(limit), messages


def compare(run_a: str, run_b: str, *, history: Optional[PathLike] = None, **options: object):
    """B − A per metric on the shared questions of two runs (folders or recorded ids); ``options`` of
    :func:`ragexam.analysis.exam.compare.compare_runs` (pipeline, pipeline_b, metrics, miss_k, seed)."""
    import inspect

    from ragexam.analysis.exam.compare import compare_runs
    from ragexam.types import check_keywords

    check_keywords(options, [p.name for p in inspect.signature(compare_runs).parameters.values()
                             if p.kind is p.KEYWORD_ONLY], "compare")
    return compare_runs(_run_data(run_a, "run_a", history), _run_data(run_b, "run_b", history), **options)


def check(run: str, floors: Sequence[str], *, pipeline: Optional[str] = None, point: bool = False,
          history: Optional[PathLike] = None, segment: Optional[str] = None, trust_judge: bool = False):
    """The CI gate: each ``METRIC=VALUE`` floor against the run's or score's 95% CI lower bound (``point``:
    its mean); ``segment``: a segment of a score made with ``--by`` (or ``all``) instead of its pipelines; a judge
    metric only when its judge was shown to separate good from bad (``trust_judge``: gate anyway); a list of
    :class:`~ragexam.analysis.gating.gate.GateResult`."""
    from ragexam.analysis.gating.gate import check_run, parse_floor

    parsed = [parse_floor(f) for f in names(floors, source="check", field="floors", what="a floor, METRIC=VALUE")]
    return check_run(_run_data(run, "run", history), parsed, pipeline=pipeline, point=point, segment=segment,
                     trust_judge=trust_judge)


# -- answers: score, generate, judge agreement ----------------------------------------------------------------


@dataclass
class ScoreOutcome:
    """What :func:`score` did: the :class:`~ragexam.analysis.answers.scoring.ScoreReport` (``None`` on a dry run,
    which fills ``plan``), the lines saying what was written, and the coverage floors that were missed."""

    report: Optional[ScoreReport] = None
    plan: Optional[JudgePlan] = None
    #: on a dry run, the judge-check's calls (``None``: it sends nothing, ``check_note`` says why)
    check_plan: Optional[JudgePlan] = None
    check_note: str = ""
    lines: List[str] = field(default_factory=list)
    failures: List[str] = field(default_factory=list)


@dataclass(frozen=True)
class JudgeAsking:
    """How the judge is asked, in every function here that judges (the judge options of their commands):
    ``max_attempts`` replies per judgment before it is unjudged, ``judge_lang`` the prompt language (``auto``: the
    Hangul share, ``ko``, ``en``), ``retry_unjudged`` judge cached unjudged results again, ``scoring`` how a score
    is read (``sample``, ``probability``, ``auto``; ``None``: the settings')."""

    max_attempts: int = 3
    judge_lang: str = "auto"
    retry_unjudged: bool = False
    scoring: Optional[str] = None

    def judge(self, settings: LLMSettings, custom: Sequence[JudgeMetric] = (), *,
              quoted: Optional[bool] = None) -> Judge:
        """The :class:`~ragexam.metrics.judge.Judge` of ``settings`` asked this way, with the ``custom`` metrics;
        ``quoted=False`` turns the quotation rule off (``judge-check`` measures the judge's own word)."""
        from ragexam.llm.settings import settings_object
        from ragexam.metrics.judge import Judge

        settings_object(settings, "judge")
        return Judge(settings=settings, max_attempts=self.max_attempts, language=self.judge_lang,
                     retry_unjudged=self.retry_unjudged, scoring=self.scoring, custom=custom, quoted=quoted)


def pairwise(qa: QALike, answers: PathLike, judge: LLMSettings, *, a: str, b: str, repeat: int = 1, max_attempts: int = 3,
             judge_lang: str = "auto", retry_unjudged: bool = False, dry_run: bool = False,
             out: Optional[PathLike] = None, progress: Progress = None):
    """Judge pipeline ``b``'s answers against pipeline ``a``'s, both orders per pair
    (:func:`ragexam.analysis.answers.pairwise.pairwise_answers`); ``judge`` is an :class:`~ragexam.llm.settings.LLMSettings`.
    Returns the :class:`~ragexam.metrics.judge.JudgePlan` with ``dry_run``, else the
    :class:`~ragexam.metrics.judge.PairwiseRun` (written as JSON to ``out``, checked before any call)."""
    from ragexam.analysis.answers.files import load_answers
    from ragexam.analysis.answers.pairwise import pairwise_answers, pairwise_pairs
    from ragexam.data.loaders import load_qa
    from ragexam.metrics.judge.pairwise import pair_items

    from ragexam.storage.paths import In, Out, check_outputs

    check_outputs([Out(out, "--out")], [In(qa, "--qa"), In(answers, "--answers")])
    questions = load_qa(qa)
    records = load_answers(answers)
    jd = JudgeAsking(max_attempts, judge_lang, retry_unjudged).judge(judge)
    if dry_run:
        pairs = pairwise_pairs(questions, records, a, b, answers_source=str(answers))
        from ragexam.metrics.judge.builtin.pairwise import METRIC as PAIRWISE

        return jd.plan(None, {PAIRWISE.name: pair_items(pairs)}, repeat=repeat)
    pr = pairwise_answers(questions, records, jd, a=a, b=b, repeat=repeat, answers_source=str(answers),
                          progress=progress)
    if out is not None:
        import json

        from ragexam.storage.runfolder import write_text

        write_text(Path(out), json.dumps(pr.to_dict(), ensure_ascii=False, indent=2) + "\n")
    return pr


@dataclass(frozen=True)
class ScoreRequest:
    """What ``ragexam score`` is asked beyond its inputs and outputs (the command's options): where answers without
    a pipeline belong (``pipeline``), the run's ``corpus`` (a ``ragexam-run/1`` folder; also the corpus of the
    judge-check), ``miss_k``, the text threshold ``correct_if`` (``"chrf>=0.5"``), an ``abstain_phrases`` file,
    ``bleu_tokenize``; for an LLM judge its ``metrics``, ``repeat``, ``max_attempts``, ``judge_lang``,
    ``retry_unjudged``, ``min_coverage``, custom ``rubrics`` (files), the ``executor`` its calls run on, ``human``
    labels (a JSONL file), whether it runs the judge-check when none of this judge on this question set is recorded
    (``judge_check``) and on how many questions (``judge_check_sample``; :mod:`ragexam.analysis.answers.trusted`);
    ``by`` a trace field to segment the answers by, its ``baseline`` segment, and ``match_threshold``, the cosine of
    a traced question's near match to an exam question (:mod:`ragexam.analysis.answers.segments`,
    :mod:`ragexam.analysis.answers.traffic`)."""

    pipeline: Optional[str] = None
    corpus: Optional[CorpusLike] = None
    miss_k: Optional[int] = None
    correct_if: Optional[str] = None
    abstain_phrases: Optional[PathLike] = None
    bleu_tokenize: str = "auto"
    metrics: Optional[Sequence[str]] = None
    repeat: int = 1
    max_attempts: int = 3
    judge_lang: str = "auto"
    retry_unjudged: bool = False
    min_coverage: Optional[float] = None
    rubrics: Sequence[PathLike] = ()
    executor: ExecutorLike = None
    human: Optional[PathLike] = None
    judge_check: bool = True
    judge_check_sample: Optional[int] = None
    by: Optional[str] = None
    baseline: Optional[str] = None
    match_threshold: Optional[float] = None

    def __post_init__(self) -> None:
        import os

        object.__setattr__(self, "metrics", names(self.metrics, source="score", field="metrics",
                                                  what="a judge metric name"))
        rubrics = self.rubrics or ()
        object.__setattr__(self, "rubrics", (rubrics,) if isinstance(rubrics, (str, os.PathLike)) else tuple(rubrics))

    @property
    def needs_judge(self) -> bool:
        """Whether an option that applies to an LLM judge was given."""
        return bool(self.metrics or self.repeat != 1 or self.rubrics or self.executor is not None
                    or self.human is not None or self.judge_check_sample is not None)

    def inputs(self, qa: QALike, answers: PathLike, run: Optional[PathLike]) -> List[Tuple[str, object]]:
        """``(option, path)`` of every file the score reads."""
        return [("--qa", qa), ("--answers", answers), ("--run", run), ("--corpus", self.corpus),
                ("--abstain-phrases", self.abstain_phrases), ("--human", self.human),
                *(("--rubric", r) for r in self.rubrics or ())]


def _score_request(request: Optional[ScoreRequest], options: Mapping[str, object]) -> ScoreRequest:
    """The :class:`ScoreRequest` of :func:`score`: ``request``, or one of its fields given as keywords (a keyword it
    does not have is a ``TypeError`` naming the ones it takes; both at once is refused)."""
    if request is None:
        return options_from(ScoreRequest, options, "score")
    if not isinstance(request, ScoreRequest):
        from ragexam.llm.settings import dict_keywords, object_expected

        raise object_expected(request, "request", "ScoreRequest", dict_keywords(request) or "miss_k=..., ...")
    if options:
        raise InputError(f"received request= and the keywords {', '.join(options)}; give the settings one way: "
                         "in the ScoreRequest or as keywords.", source="score", field="request")
    return request


def _score_options(req: ScoreRequest, answers: PathLike) -> ScoreOptions:
    """The request's :class:`~ragexam.analysis.answers.options.ScoreOptions` (checked as it is made): the text
    threshold parsed, the phrase file read."""
    from ragexam.analysis.answers.options import ScoreOptions
    from ragexam.metrics.verdicts import load_phrases, parse_correct_if

    phrases = None
    if req.abstain_phrases is not None:
        path = Path(req.abstain_phrases)
        try:
            phrases = load_phrases(path.read_text(encoding="utf-8").splitlines(), source=str(path))
        except OSError as err:
            raise InputError(f"cannot read: {err.strerror or err}", source=str(path), field="abstain_phrases") from None
    import os

    return ScoreOptions(answers_source=str(answers) if isinstance(answers, (str, os.PathLike)) else "answers",
                        pipeline=req.pipeline, k=req.miss_k, corpus=req.corpus,
                        repeat=req.repeat,
                        correct_if=parse_correct_if(req.correct_if) if req.correct_if is not None else None,
                        abstain_phrases=phrases, bleu_tokenize=req.bleu_tokenize, min_coverage=req.min_coverage,
                        judge_check=req.judge_check,
                        **({} if req.judge_check_sample is None else {"judge_check_sample": req.judge_check_sample}),
                        by=req.by, baseline=req.baseline, match_threshold=req.match_threshold)


def _score_judge(settings: Optional[LLMSettings], req: ScoreRequest, *, traffic: bool = False
                 ) -> Tuple[Optional[Judge], Optional[List[str]]]:
    """``(judge, metrics)``: the :class:`~ragexam.metrics.judge.Judge` of ``settings`` with the request's custom
    rubrics, and the metrics it grades (the request's, else the default ones -- for ``traffic``, traced answers,
    the reference-free ones -- and every rubric); ``(None, None)`` without a judge."""
    if settings is None:
        return None, None
    from ragexam.metrics.judge import load_rubric

    jd = JudgeAsking(req.max_attempts, req.judge_lang, req.retry_unjudged).judge(
        settings, [load_rubric(r) for r in req.rubrics or ()])
    if req.metrics:
        return jd, list(req.metrics)
    from ragexam.analysis.answers.traffic import reference_free_metrics
    from ragexam.metrics.judge.registry import DEFAULT_METRICS

    return jd, list(reference_free_metrics() if traffic else DEFAULT_METRICS) + list(jd.custom)


def score(qa: Optional[QALike], answers: PathLike, *, run: Optional[PathLike] = None,
          judge: Optional[LLMSettings] = None,
          out: Optional[PathLike] = None, report: Optional[PathLike] = None, history: Optional[PathLike] = None,
          record: bool = True, dry_run: bool = False, progress: Progress = None,
          request: Optional[ScoreRequest] = None, **options: object) -> ScoreOutcome:
    """Score generated ``answers`` to the questions of ``qa``: text metrics against ``ground_truth``, the LLM
    judge when ``judge`` (an :class:`~ragexam.llm.settings.LLMSettings`) is given, and the stage that lost each
    answer when ``run`` (a run folder) is given (the stages of :mod:`ragexam.analysis.answers.stages`).  Writes the
    score folder ``out``, the run's HTML ``report`` with the answers, and the history record; every output path
    is checked, and every setting, before any judge call.  The settings are a :class:`ScoreRequest` (``request``)
    or its fields as keywords: ``rubrics``: custom rubric files (docs/judge.md), judged metrics named by their
    files; without ``metrics`` the judge grades :data:`~ragexam.metrics.judge.registry.DEFAULT_METRICS` and every
    rubric.  ``executor``: where the judge's calls run (``"local"``, ``"ray"``, ``"ray://HOST:PORT"`` or an
    executor object; default threads here), see :class:`~ragexam.metrics.judge.Judge`.  ``human``: a JSONL file of
    human labels (``{"query_id", "pipeline"?, "human": {...}}``,
    :func:`ragexam.analysis.judging.agreement.read_human_labels`): each judged metric gets its prediction-powered
    estimate beside the judge mean.  ``qa`` may be ``None`` when every answer carries its ``question`` (production
    traces: :mod:`ragexam.analysis.answers.traffic`); ``by``: segment the answers by a trace field
    (:mod:`ragexam.analysis.answers.segments`); ``report`` without ``run`` is the page of the score's segments."""
    from ragexam.analysis.answers import stages
    from ragexam.analysis.answers.files import load_answers
    from ragexam.analysis.answers.scoring import score_joined
    from ragexam.data.loaders import load_qa

    req = _score_request(request, options)
    _progress(progress, "score")
    if judge is not None:
        from ragexam.llm.settings import settings_object

        settings_object(judge, "judge")
    _check_outputs(out=out, out_kind="score", report=report, history=history, record=record and not dry_run,
                   inputs=req.inputs(qa, answers, run))
    opts = _score_options(req, answers)
    opts.check_judge(judge=judge is not None, human=False, source="ragexam score")
    if judge is None and (dry_run or req.needs_judge):
        given = "a dry run" if dry_run else "the judge options given"
        raise InputError(judge_needed(given), source="score", field="judge_model" if audience() == "cli" else "judge")
    joined = stages.join(load_qa(qa) if qa is not None else None, load_answers(answers), options=opts,
                         run=_run_data(run, "run", folder=True) if run is not None else None)
    if report is not None and run is None and opts.by is None and not joined.traced:
        raise InputError(f"{option('report')} needs {setting('run', 'DIR')}: the report is the HTML report of that "
                         f"retrieval run (from {command('ragexam run --out DIR', 'ragexam.run(...).save(DIR)')}) with "
                         f"these answers added, or (with {option('by')}, or for traced answers) the page of the "
                         f"score's segments; pass {option('run')} or {option('by')}, or drop {option('report')}",
                         source="ragexam score" if audience() == "cli" else "score", field="report")
    human = None
    if req.human is not None:
        from ragexam.analysis.judging.agreement import read_human_labels

        human = read_human_labels(req.human)
    jd, metrics = _score_judge(judge, req, traffic=joined.traced and not any(r.question.ground_truth
                                                                            for r in joined.rows))
    if dry_run:
        check_plan, check_note = stages.plan_check(joined, jd, metrics)
        return ScoreOutcome(plan=stages.plan_judging(joined.rows, jd, metrics, repeat=opts.repeat),
                            check_plan=check_plan, check_note=check_note)
    from ragexam.exec import calls_executor

    with calls_executor(req.executor) as ex:
        if jd is not None and ex is not None:
            jd.executor = ex
        rep = score_joined(joined, jd, metrics, human=human, progress=progress)
    return _score_outputs(rep, run, joined.run, out=out, report=report, history=history, record=record)


def _score_outputs(rep: ScoreReport, run: Optional[PathLike], run_info: Optional[RunData], *,
                   out: Optional[PathLike], report: Optional[PathLike], history: Optional[PathLike],
                   record: bool) -> ScoreOutcome:
    """Write what ``ragexam score`` writes (the score folder, the history record, the run's report with the
    answers) and say so; the coverage floors the score missed."""
    from ragexam.analysis.answers.scoring import save_score

    outcome = ScoreOutcome(report=rep)
    if out is not None:
        save_score(rep, out)
        outcome.lines.append("Wrote score.json, per_answer.csv" + (", judgments.jsonl" if rep.judge_run is not None
                                                                  else "") + f" to {out}.")
    if record:
        from ragexam.analysis.gating.history import record_score
        from ragexam.storage.history import History

        hist_path = History(history).path
        score_id = record_score(rep, run_info.summary if run_info is not None else None, hist_path)
        outcome.lines.append(f"Recorded as {score_id} in {hist_path} (ragexam show {score_id}).")
    if report is not None and run_info is None:
        from ragexam.report.score_page import write_score_page

        path = write_score_page(rep.summary, report)
        outcome.lines.append(f"Wrote the page of this score's segments to {path}.")
    elif report is not None:
        from ragexam.analysis.gating.history import score_report_inputs
        from ragexam.report.html import write_report

        summary, per_question, shown = score_report_inputs(run_info, rep)
        path = write_report(summary, per_question, report, answers=shown, segments=rep.summary.segments)
        shown = run if isinstance(run, (str, Path)) else run_info.source
        outcome.lines.append(f"Wrote the HTML report of {shown} with these answers to {path}.")
    outcome.failures = rep.coverage_failures()
    return outcome


@dataclass
class AnswerOutcome:
    """What :func:`answer` did: the answer records written to ``out`` (or, on a dry run, the ``plan``), the
    usage of this run and its cost, and a ``note`` when the run folder did not store its chunk texts."""

    records: List[AnswerRecord] = field(default_factory=list)
    usage: Dict[str, Any] = field(default_factory=dict)
    cost: Optional[Union[float, str]] = None
    plan: Optional[Dict[str, Any]] = None
    note: Optional[str] = None
    out: Optional[Path] = None

    @property
    def failed(self) -> int:
        return sum(1 for r in self.records if r.answer is None)


def answer(run: PathLike, settings: LLMSettings, out: Optional[PathLike], *, qa: Optional[QALike] = None,
           corpus: Optional[CorpusLike] = None,
           pipelines: Optional[Sequence[str]] = None, contexts: Optional[int] = None,
           template: Optional[PathLike] = None,
           lang: str = "auto", dry_run: bool = False, progress: Progress = None,
           executor: ExecutorLike = None) -> AnswerOutcome:
    """Generate an answer per question and pipeline of the run folder ``run`` from its top ``contexts`` chunks
    with the chat model of ``settings`` (an :class:`~ragexam.llm.settings.LLMSettings`), and write the answers
    file ``out`` (checked before any call); see :mod:`ragexam.analysis.answers.answering`.  ``contexts`` defaults to
    :data:`ragexam.storage.summary.DEFAULT_MISS_K`.  ``executor``: where the
    calls run (``"ray"``, ``"ray://HOST:PORT"`` or an executor object; default threads here)."""
    from ragexam.analysis.answers.files import write_answers
    from ragexam.analysis.answers.answering import answer_tasks, answer_questions, load_template, plan_answers
    from ragexam.data.loaders import load_corpus, load_qa
    from ragexam.llm.client import LLMClient
    from ragexam.llm.cost import cost_usd, price_for
    from ragexam.storage.paths import In, Out, check_outputs
    from ragexam.storage.runfolder import read_run_folder
    from ragexam.storage.summary import DEFAULT_MISS_K

    from ragexam.llm.settings import settings_object

    settings_object(settings, "settings")
    _progress(progress, "answer")
    contexts = DEFAULT_MISS_K if contexts is None else contexts
    if not dry_run:
        if out is None:
            raise InputError("no output file; pass --out FILE.jsonl", source="ragexam answer", field="out")
        check_outputs([Out(out, "--out")], [In(run, "--run"), In(qa, "--qa"), In(corpus, "--corpus"),
                                            In(template, "--template")])
    info = read_run_folder(run)
    cfg = info.config
    qa_ref = qa or cfg.get("qa")
    corpus_ref = corpus or cfg.get("corpus")
    if not dry_run:  # the question set and corpus the run recorded are read too
        check_outputs([Out(out, "--out")], [In(qa_ref, "the run's qa"), In(corpus_ref, "the run's corpus")])
    if not qa_ref:
        raise InputError("the run does not record its question set; pass --qa", source=str(run))
    questions = load_qa(qa_ref)
    docs = None
    outcome = AnswerOutcome(out=Path(out) if out is not None else None)
    if not info.has_chunk_texts:  # a ragexam-run/1 folder: its chunk texts are rebuilt from the corpus
        if not corpus_ref:
            raise InputError("the run does not record its corpus; pass --corpus", source=str(run))
        docs = load_corpus(corpus_ref)
        outcome.note = (f"{run} ({info.format}) does not store its chunk texts; they were rebuilt by re-chunking "
                        f"{corpus_ref} with each pipeline's chunker (run folders from ragexam-run/2 on store them).")
    tmpl = load_template(template) if template is not None else None
    max_tokens = settings.max_tokens or ANSWER_MAX_TOKENS
    client = LLMClient(settings)
    tasks, _, sha = answer_tasks(questions, info, docs, model=settings.model, endpoint=client.endpoint,
                                 pipelines=names(pipelines, source="answer", field="pipelines",
                                                 what="a pipeline name") or None, contexts=contexts, template=tmpl,
                                 language=lang, temperature=settings.temperature, max_tokens=max_tokens,
                                 seed=settings.seed)
    cache = settings.open_cache()
    price = price_for(settings.model, client.endpoint, settings.price)
    if dry_run:
        outcome.plan = plan_answers(tasks, cache)
        outcome.cost = cost_usd(outcome.plan["est_prompt_tokens"], outcome.plan["est_completion_tokens"], price)
        return outcome
    from ragexam.exec import calls_executor

    with calls_executor(executor) as ex:
        outcome.records, outcome.usage = answer_questions(
            tasks, client, cache=cache, contexts=contexts, template_sha=sha, temperature=settings.temperature,
            max_tokens=max_tokens, seed=settings.seed, concurrency=settings.concurrency, progress=progress,
            executor=ex)
    write_answers(outcome.records, out)
    outcome.cost = cost_usd(outcome.usage["prompt_tokens"], outcome.usage["completion_tokens"], price)
    return outcome


@dataclass
class AgreementOutcome:
    """What :func:`judge_agreement` did: per metric the :class:`~ragexam.analysis.judging.agreement` result
    (``results``), the judge run (``None`` on a dry run, which fills ``plan``) and the scored rows."""

    results: Dict[str, Any] = field(default_factory=dict)
    judge_run: Optional[JudgeRun] = None
    plan: Optional[JudgePlan] = None
    rows: List[AnswerRow] = field(default_factory=list)


def judge_agreement(qa: QALike, answers: PathLike, judge: LLMSettings, *, metrics: Optional[Sequence[str]] = None,
                    weights: Optional[str] = "quadratic", top: int = 10, run: Optional[PathLike] = None,
                    pipeline: Optional[str] = None, corpus: Optional[CorpusLike] = None, dry_run: bool = False,
                    progress: Progress = None, **asking: object) -> AgreementOutcome:
    """The judge of ``judge`` (an :class:`~ragexam.llm.settings.LLMSettings`) against human labels
    (``"human": {"answer_correctness": 4}`` on questions or answers): kappa, weighted kappa, Spearman and the
    largest disagreements; see :mod:`ragexam.analysis.judging.agreement`.  ``asking``: how the judge is asked
    (:class:`JudgeAsking`: ``max_attempts``, ``judge_lang``, ...)."""
    from ragexam.analysis.answers.files import load_answers
    from ragexam.analysis.judging.agreement import collect_human_labels, human_agreement
    from ragexam.analysis.answers.scoring import judge_jobs, prepare_rows
    from ragexam.data.loaders import load_qa
    from ragexam.metrics.judge.registry import label_example
    from ragexam.metrics.judge.registry import METRICS
    from ragexam.storage.runfolder import read_run_folder

    if weights not in (None, "none", "linear", "quadratic"):
        raise InputError(f"received {weights!r}; expected none, linear or quadratic", source="--weights",
                         field="weights")
    questions = load_qa(qa)
    records = load_answers(answers)
    rows = prepare_rows(questions, records, answers_source=str(answers),
                        run=read_run_folder(run) if run is not None else None, pipeline=pipeline, corpus=corpus)
    human = collect_human_labels(rows, questions_source=str(questions.source), answers_source=str(answers))
    wanted = names(metrics, source="judge_agreement", field="metrics", what="a metric name") or \
        [m for m in METRICS if m in human]
    if not wanted:
        raise InputError("no question or answer has a 'human' object; expected e.g. \"human\": "
                         f"{label_example()} on the questions that were labelled",
                         source=str(questions.source), field="human")
    jd = options_from(JudgeAsking, asking, "judge_agreement").judge(judge)
    labelled = {m: [r for r in rows if r.item_id in human.get(m, {})] for m in wanted}
    jobs = {m: judge_jobs(labelled[m], [m])[m] for m in wanted}
    outcome = AgreementOutcome(rows=rows)
    if dry_run:
        outcome.plan = jd.plan(None, jobs)
        return outcome
    outcome.judge_run = jd.run(None, jobs, progress=progress)
    w = None if weights in (None, "none") else weights
    outcome.results = {m: human_agreement(outcome.judge_run.items(m), human.get(m, {}), m, weights=w, top=top)
                       for m in wanted}
    return outcome


# -- judge-check and llm probe (the judge helper's block: issue 22) -------------------------------------------


@dataclass
class JudgeCheckOutcome:
    """What :func:`judge_check` did: the :class:`~ragexam.analysis.judging.check.JudgeCheck` (``None`` on a dry run,
    which fills ``plan``) and the lines saying what was written."""

    check: Optional[JudgeCheck] = None
    plan: Optional[JudgePlan] = None
    lines: List[str] = field(default_factory=list)


def judge_check(qa: QALike, corpus: CorpusLike, judge: LLMSettings, *, metrics: Optional[Sequence[str]] = None,
                chunker: str = "paragraphs:400", limit: Optional[int] = None, seed: int = 12345,
                dry_run: bool = False, out: Optional[PathLike] = None, progress: Progress = None,
                rubrics: Sequence[PathLike] = (), **asking: object) -> JudgeCheckOutcome:
    """Does the judge ``judge`` (an :class:`~ragexam.llm.settings.LLMSettings`) separate good from bad on this
    question set?  A contrast set built from ``qa`` and ``corpus`` (evidence context vs a hard negative and a
    random one; the reference answer vs a perturbed one), judged, and per metric the ROC AUC with its bootstrap
    interval, the score gap, the share of pairs ordered correctly and a verdict, with sampled and (when the
    endpoint returns log-probabilities) probability-weighted scores; see :mod:`ragexam.analysis.judging.check`.
    ``out``: the check as JSON (checked before any call); ``rubrics``: custom rubric files, checked too (by default
    with the built-ins when ``metrics`` is not given); ``asking``: how the judge is asked (:class:`JudgeAsking`:
    ``scoring``, default ``auto``, ``max_attempts``, ``judge_lang``)."""
    from ragexam.analysis.judging.check import DEFAULT_CHECK_METRICS, build_contrast, check_judge
    from ragexam.analysis.judging.trust import dataset_of
    from ragexam.data.loaders import load_corpus, load_qa

    from ragexam.metrics.judge import load_rubric

    _check_outputs(out=out, out_kind="file", record=False,
                   inputs=[("--qa", qa), ("--corpus", corpus), *(("--rubric", r) for r in rubrics or ())])
    questions = load_qa(qa)
    docs = load_corpus(corpus)
    custom = [load_rubric(r) for r in rubrics or ()]
    ask = options_from(JudgeAsking, {"scoring": "auto", **asking}, "judge_check")
    jd = ask.judge(judge, custom, quoted=False)  # the judge's own word: the quotation rule off
    wanted = [jd.metric(m) for m in (names(metrics, source="judge_check", field="metrics", what="a metric name")
                                     or list(DEFAULT_CHECK_METRICS) + [c.name for c in custom])]
    notes: List[str] = []
    contrast = build_contrast(questions, docs, wanted, chunker=chunker, limit=limit, seed=seed, notes=notes)
    if dry_run:
        return JudgeCheckOutcome(plan=jd.plan(None, {m: [c.item for c in v] for m, v in contrast.items()}))
    settings = {"qa": str(questions.source), "corpus": str(docs.source), "chunker": chunker, "limit": limit,
                "seed": seed, "metrics": [m.name for m in wanted], "scoring": ask.scoring,
                "rubrics": [str(r) for r in rubrics or ()]}
    outcome = JudgeCheckOutcome(check=check_judge(jd, contrast, seed=seed, progress=progress, notes=notes,
                                                  settings=settings, dataset=dataset_of(questions)))
    if out is not None:
        import json

        from ragexam.storage.runfolder import write_text

        write_text(Path(out), json.dumps(outcome.check.to_dict(), ensure_ascii=False, indent=2) + "\n")
        outcome.lines.append(f"Wrote the check to {out}.")
    return outcome


def llm_probe(settings: LLMSettings, *, refresh: bool = False):
    """What the endpoint of ``settings`` (an :class:`~ragexam.llm.settings.LLMSettings`) supports --
    ``json_schema``, ``json_object``, ``logprobs``, ``seed`` -- asked once and kept in the LLM cache
    (:func:`ragexam.llm.probe.probe`; ``refresh``: ask again).  :raises EndpointError: the endpoint cannot be
    asked (nothing listening, HTTP 5xx, a reply that is not a chat completion), saying what to fix."""
    from ragexam.llm.client import LLMClient
    from ragexam.llm.probe import probe, unreachable
    from ragexam.llm.settings import settings_object
    from ragexam.llm.transport import CallFailed

    client = LLMClient(settings_object(settings, "settings"))
    try:
        return probe(client, settings.open_cache(), refresh=refresh)
    except CallFailed as err:
        raise unreachable(err, client.endpoint) from None


def llm_fitness(settings: Any, corpus: Any, qa: Any, *, sample: Optional[int] = None,
                generation_calls: Optional[int] = None, seed: int = 12345, max_attempts: int = 3,
                judge_lang: str = "auto", announce: Optional[Callable[[Any], None]] = None, progress: Progress = None):
    """``ragexam llm probe --fitness``: what the model of ``settings`` is fit for on ``corpus`` and ``qa`` -- the
    endpoint probe, a judge-check on a seeded ``sample`` of the questions, a generation of ``generation_calls``
    calls -- with the budget given to ``announce`` before the first call
    (:mod:`ragexam.analysis.judging.fitness`).  :returns: :class:`~ragexam.analysis.judging.fitness.Fitness`.
    :raises EndpointError: the endpoint cannot be asked at all."""
    from ragexam.analysis.judging.check import DEFAULT_CHECK_METRICS, build_contrast
    from ragexam.analysis.judging.fitness import GENERATION_CALLS, SAMPLE, run_fitness
    from ragexam.analysis.judging.trust import dataset_of
    from ragexam.data.loaders import load_corpus, load_qa
    from ragexam.llm.probe import unreachable
    from ragexam.llm.transport import CallFailed

    questions, docs = load_qa(qa), load_corpus(corpus)
    calls = GENERATION_CALLS if generation_calls is None else generation_calls
    integer_in(calls, 1, source="--generation-calls", field="generation_calls")
    jd = JudgeAsking(max_attempts, judge_lang).judge(settings, quoted=False)  # the judge's own word
    contrast = build_contrast(questions, docs, list(DEFAULT_CHECK_METRICS), limit=SAMPLE if sample is None else sample,
                              seed=seed)

    def generation(max_calls: int) -> Any:
        return generate(docs, max(1, max_calls) * 3, settings=settings, max_calls=max_calls, seed=seed,
                              max_attempts=max_attempts)

    try:
        return run_fitness(jd, contrast, generation, generation_calls=calls, seed=seed, dataset=dataset_of(questions),
                           announce=announce, progress=progress)
    except CallFailed as err:
        raise unreachable(err, jd.endpoint, "anything") from None


def generate(corpus: CorpusLike, n: Optional[int] = None, *, model: Optional[str] = None, out: Optional[PathLike] = None,
             judge_model: Optional[str] = None, settings: Optional[LLMSettings] = None,
             config: Optional[GenerateConfig] = None, progress: Optional[Callable[[str, int, int], None]] = None,
             **options: object):
    """``ragexam generate``: a verified question set from ``corpus`` (a file, a bundled name or a
    :class:`~ragexam.data.schema.Corpus`); with ``out``, the set and its side files written there (every output
    path checked before any call; none may be the corpus or the prompt file).  ``options`` are the fields of
    :class:`~ragexam.questions.config.GenerateConfig` (``mix``, ``kinds``, ``cite``, ``skip_checks``,
    ``max_calls``, ``max_generation_calls``, ``budget``, ...) and of :class:`~ragexam.llm.settings.LLMSettings`
    (``base_url``, ``api_key``, ``temperature``, ``cache_dir``, ...), or pass ``settings=`` / ``config=`` objects;
    ``judge_model`` is the model of the LLM checks (default: the generator's own).  The stages:
    :mod:`ragexam.questions.stages`.

    :returns: a :class:`~ragexam.questions.products.GenerateResult` (``records``, ``rejects``, ``card``,
        ``shortfall``).
    :raises InputError: bad settings, an unwritable ``out``, an unreadable corpus or prompt file.
    :raises ragexam.llm.transport.EndpointError: the endpoint refused the configuration (401/403/404); every call
        finished before that is cached.
    """
    from ragexam.questions.config import resolve
    from ragexam.questions.stages import make_set, prepare

    if out is not None:
        _check_generate_outputs(corpus, out, options, config)
    cfg, llm = resolve(model, n, options, settings, config)
    result = make_set(prepare(corpus, cfg, llm, judge_model=judge_model, progress=progress))
    if out is not None:
        result.save(out)
    return result


def _check_generate_outputs(corpus: CorpusLike, out: PathLike, options: Mapping[str, object],
                            config: Optional[GenerateConfig]) -> None:
    """Every file of a generation to ``out`` (the set and its side files) checked before any call: none may be the
    corpus or the prompt file."""
    from ragexam.questions.output import check_outputs
    from ragexam.storage.paths import In

    prompt = options.get("prompt") if config is None else getattr(config, "prompt", None)
    check_outputs(out, [In(getattr(corpus, "source", corpus), "--corpus"), In(prompt, "--prompt")])


def generate_plan(corpus: CorpusLike, n: Optional[int] = None, *, model: Optional[str] = None,
                  judge_model: Optional[str] = None, settings: Optional[LLMSettings] = None,
                  config: Optional[GenerateConfig] = None, **options: object):
    """``ragexam generate --dry-run``: what the first uncached pass of :func:`generate` (same arguments; an ``out``
    is checked as :func:`generate` checks it, so the dry run refuses what the run would) would call, with estimated
    tokens and cost.  Nothing is sent or written.
    :returns: a :class:`~ragexam.questions.products.GeneratePlan`."""
    from ragexam.questions.config import resolve
    from ragexam.questions.stages import plan_set, prepare

    out = options.pop("out", None)
    if out is not None:
        _check_generate_outputs(corpus, out, options, config)
    cfg, llm = resolve(model, n, options, settings, config)
    return plan_set(prepare(corpus, cfg, llm, judge_model=judge_model))


def review_apply(qa: PathLike, out: PathLike, *, review: Optional[PathLike] = None,
                 corpus: Optional[CorpusLike] = None,
                 pending: str = "keep", max_junk: Optional[float] = None):
    """``ragexam review apply``: the person's review sheet applied to a generated set, the reviewed set written to
    ``out`` (which may be none of the files it reads) with its audit sidecar; with ``max_junk``, nothing is written
    when the written set's junk upper bound is above it (``result.refused``).  :returns: a
    :class:`~ragexam.questions.review.ReviewResult`."""
    from ragexam.questions.review import apply_review

    return apply_review(qa, review, out, corpus=corpus, pending=pending, max_junk=max_junk)


def review_audit(qa: PathLike, *, sample: Optional[int] = None, seed: Optional[int] = None, restart: bool = False,
                 sheet: Optional[PathLike] = None, labels: Optional[PathLike] = None):
    """``ragexam review audit``: open (or start) the audit of the set ``qa`` -- a seeded random sample of its
    questions -- and, with ``sheet``, write the sample as a sheet to label, or, with ``labels``, read a filled sheet
    back (:mod:`ragexam.questions.auditing`).  :returns: ``(AuditOpened, ReviewQueue)``: the audit and the review
    queue its labels measure."""
    from ragexam.questions.audit import AUDITED
    from ragexam.questions.auditing import open_audit, read_sheet, write_sheet
    from ragexam.questions.risk import review_queue

    if sheet is not None and labels is not None:
        raise InputError("--sheet writes the sample to label and --labels reads it back; give one of them",
                         source="review audit", field="sheet")
    opened = read_sheet(qa, labels) if labels is not None else open_audit(qa, sample, seed, restart=restart)
    if sheet is not None:
        write_sheet(opened, sheet)
    usable = opened.audit if opened.status.state == AUDITED else None
    return opened, review_queue(opened.set.records, usable)


def review_queue(qa: PathLike, *, target: float = 0.1):
    """``ragexam review queue``: the set's review queue, by predicted risk when its audit shows the checks' signals
    help, else random; and where a person may stop.  :returns: :class:`~ragexam.questions.auditing.SetQueue`."""
    from ragexam.questions.auditing import set_queue

    return set_queue(qa, target)


def check_junk(max_junk: float, *, qa: Optional[PathLike] = None, run: Optional[str] = None,
               history: Optional[PathLike] = None):
    """``ragexam check --max-junk``: the gate on a set's audited junk rate -- the set file ``qa``, or the set the run
    ``run`` read.  :returns: :class:`~ragexam.analysis.gating.junk.JunkGate`."""
    from ragexam.analysis.gating.junk import check_run_junk, check_set_junk
    from ragexam.storage.history import resolve_run

    if qa is not None:
        return check_set_junk(qa, max_junk)
    if run is None:
        raise InputError("needs --qa QA or a RUN whose set to gate", source="check", field="--max-junk")
    return check_run_junk(resolve_run(run, history), max_junk)


# -- production traces ------------------------------------------------------------------------------------------


def import_traces(files: Sequence[PathLike], out: Optional[PathLike], *, fmt: str = "auto",
                  mapping: Sequence[str] = (), redact: bool = False, hash_salt: str = "", explain: int = 0,
                  progress: Progress = None):
    """``ragexam traces import``: Langfuse, Phoenix or OTLP exports as an answers file (docs/traces.md); ``out=None``
    writes nothing (``--explain`` alone).  :returns: an :class:`~ragexam.analysis.answers.traces.ImportResult`."""
    from ragexam.analysis.answers.traces import import_traces as run_import

    return run_import(files, out, fmt=fmt, mapping=mapping, redact=redact, hash_salt=hash_salt, explain=explain,
                      progress=progress)


def sample_traces(answers: PathLike, n: int, corpus: CorpusLike, out: Optional[PathLike], *, threshold: Optional[float] = None,
                  strategy: str = "weighted", seed: int = 12345, first: Sequence[str] = (), id_prefix: str = "trace",
                  redact: bool = False):
    """``ragexam traces sample``: questions of imported traffic as exam candidates for review (docs/traces.md).
    :returns: a :class:`~ragexam.questions.traces_sample.SampleResult`."""
    from ragexam.analysis.answers.traces import sample_traces as run_sample

    return run_sample(answers, n, corpus, out, threshold=threshold, strategy=strategy, seed=seed, first=first,
                      id_prefix=id_prefix, redact=redact)


def locate_evidence(corpus: CorpusLike, qa: QALike, out: Optional[PathLike] = None, *,
                    threshold: Optional[float] = None, semantic: bool = True, windows: bool = True,
                    llm: Optional[LLMSettings] = None, dry_run: bool = False,
                    progress: Progress = None):
    """``ragexam locate-evidence``: the evidence of every answerable question without it, located in its relevant
    documents (or the whole corpus) from its answer key; the located set, its card and review sheet written to
    ``out`` (checked before any work: none may be the corpus or the question set).  ``llm``: an
    :class:`~ragexam.llm.settings.LLMSettings` whose model confirms each span; with ``dry_run`` the spans are
    located and the model's calls only counted and priced.
    :returns: a :class:`~ragexam.questions.locate_set.LocateResult` (``dry_run``: a
        :class:`~ragexam.llm.batch.CallPlan`)."""
    from ragexam.questions.locate import DEFAULT_THRESHOLD, LocateSettings
    from ragexam.questions.locate_set import locate_set, plan_set, write_located

    if llm is not None:
        from ragexam.llm.settings import settings_object

        settings_object(llm, "llm")
    settings = LocateSettings(threshold=DEFAULT_THRESHOLD if threshold is None else threshold, semantic=semantic,
                              windows=windows)
    if dry_run:
        if llm is None:
            raise InputError("a dry run counts the model's calls: give a model (--model)", source="--dry-run",
                             field="dry_run")
        return plan_set(corpus, qa, llm, settings=settings)
    if out is None:
        raise InputError("needs --out FILE.jsonl: the located set is written there (the input is never changed)",
                         source="ragexam locate-evidence", field="out")
    from ragexam.questions.output import check_outputs
    from ragexam.storage.paths import In

    check_outputs(out, [In(_input_path(corpus), "--corpus"), In(_input_path(qa), "--qa")])
    result = locate_set(corpus, qa, settings=settings, llm=llm, progress=progress)
    write_located(result, out)
    return result
