"""Long commands on the command line: progress lines in logs, and one line when interrupted.

:func:`long_command` wraps a command of :data:`LONG_COMMANDS` (``ragexam.cli.main`` calls it):

* when stderr is not a terminal, the command's progress lines (:mod:`ragexam.exec.progress`: stage, done/total,
  rate, ETA, at most one line every ``$RAGEXAM_PROGRESS_INTERVAL`` seconds, 10 by default);
* Ctrl-C (SIGINT) or SIGTERM stops the command with **one** line saying what is kept and that running the same
  command again resumes (the caches keep every finished batch and reply; a run folder is written only whole),
  and exit status 130 (SIGINT) or 143 (SIGTERM), instead of a traceback or a silent death.
"""

from __future__ import annotations

import signal
import sys
import threading
from contextlib import contextmanager
from typing import Iterator, List, Optional

__all__ = ["LONG_COMMANDS", "long_command", "command_of", "Interrupted", "interrupted_line"]

#: command -> what it keeps when interrupted: ``"run"`` (the retrieval cache; no run folder), ``"llm"`` (the LLM
#: cache of every reply received) or ``"files"`` (its files are written whole at the end; the caches keep the
#: vectors made and the replies of a model, if one was asked; the work itself is done again)
LONG_COMMANDS = {"run": "run", "grade": "run", "demo": "run", "generate": "llm", "score": "llm", "answer": "llm",
                 "judge-check": "llm", "judge-agreement": "llm", "pairwise": "llm", "locate-evidence": "files",
                 "traces": "files"}

_SIGNAL_NAMES = {signal.SIGINT: ("SIGINT", "Ctrl-C"), signal.SIGTERM: ("SIGTERM", "")}


class Interrupted(BaseException):
    """Raised in the main thread by SIGINT or SIGTERM while a long command runs (a ``BaseException``, like
    ``KeyboardInterrupt``, so no ``except Exception`` swallows it; not a ``KeyboardInterrupt``, so the command
    line's own handler does not print ``Aborted!`` instead of the line)."""

    def __init__(self, signum: int, stage: Optional[str] = None) -> None:
        super().__init__(signum)
        self.signum, self.stage = signum, stage


def command_of(argv: List[str]) -> Optional[str]:
    """The command named in ``argv`` (the first word that is not an option), or ``None``."""
    return next((a for a in argv if not a.startswith("-")), None)


def _ko() -> bool:
    from ragexam.exec.progress import _lang

    return _lang() == "ko"


def interrupted_line(command: str, signum: int, stage: Optional[str] = None) -> str:
    """The one line printed when ``command`` is interrupted by ``signum`` in ``stage``: where it was, what is kept,
    that a rerun resumes."""
    from ragexam.exec.progress import active, duration
    from ragexam.storage.paths import cache_dir

    name, key = _SIGNAL_NAMES.get(signum, (f"signal {signum}", ""))
    how = f"{name} ({key})" if key else name
    lines = active()
    ko = _ko()
    spent = duration(lines.elapsed(), "ko" if ko else "en") if lines is not None else ""
    if ko:
        where = ", ".join(x for x in (f"{stage} 단계" if stage else "", f"{spent} 경과" if spent else "") if x)
        where = f" ({where})" if where else ""
    else:
        where = (f" in stage {stage}" if stage else "") + (f" after {spent}" if spent else "")
    said = _KEPT[LONG_COMMANDS.get(command, "llm")]["ko" if ko else "en"]
    folder = cache_dir()
    head = f"중단됨 ({how}){where}: " if ko else f"interrupted by {how}{where}: "
    return head + said.format(folder=folder, llm=folder / "llm-cache.sqlite3")


#: what is kept, by :data:`LONG_COMMANDS`'s kind and language (``{folder}``: the cache folder, ``{llm}``: the LLM
#: cache's file)
_KEPT = {
    "run": {"en": "the run folder and its history entry are written whole at the end, so nothing half-written is "
                  "left; the retrieval cache ({folder}) keeps every chunking, token list and embedding batch "
                  "finished, so running the same command again resumes from there.",
            "ko": "실행 폴더와 기록은 마지막에 한꺼번에 쓰이므로 반쯤 쓰인 것은 없습니다. 검색 캐시({folder})에 끝난 청킹, 토큰, "
                  "임베딩 배치가 모두 남아 있으니 같은 명령을 다시 실행하면 거기서 이어집니다."},
    "files": {"en": "its files are written whole at the end, so nothing half-written is left; the e5 vectors made are "
                    "kept in the retrieval cache ({folder}) and the replies of a --model in the LLM cache ({llm}), but "
                    "running the same command again does the rest of the work from the start.",
              "ko": "출력 파일은 마지막에 한꺼번에 쓰이므로 반쯤 쓰인 것은 없습니다. 만든 e5 벡터는 검색 캐시({folder})에, "
                    "모델(--model)의 응답은 LLM 캐시({llm})에 남지만, 같은 명령을 다시 실행하면 나머지 작업은 처음부터 다시 "
                    "합니다."},
    "llm": {"en": "every reply received is kept in the LLM cache ({llm}), so running the same command again resumes: "
                  "replies already received are not requested again.",
            "ko": "받은 응답은 모두 LLM 캐시({llm})에 남아 있으니 같은 명령을 다시 실행하면 이어집니다 (이미 받은 응답은 다시 "
                  "요청하지 않습니다)."},
}


def _raise(signum: int, frame: object) -> None:
    """The handler: the stage running when the signal came (the progress lines', else the run's recorder's)."""
    from ragexam.exec.progress import active
    from ragexam.exec.timing import current_stages

    lines, times = active(), current_stages()
    raise Interrupted(signum, (lines.stage if lines is not None else None)
                      or (times.current if times is not None else None))


@contextmanager
def _signals() -> Iterator[None]:
    """SIGINT and SIGTERM raise :class:`Interrupted` in the main thread (nothing changes in another thread)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    for s in before:
        signal.signal(s, _raise)
    try:
        yield
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)


@contextmanager
def long_command(argv: List[str]) -> Iterator[None]:
    """Progress lines and the interrupt line for the command of ``argv`` when it is one of :data:`LONG_COMMANDS`
    (module docstring); other commands run as they are."""
    command = command_of(argv)
    if command not in LONG_COMMANDS or "--help" in argv:
        yield
        return
    from ragexam.exec.progress import progress_lines

    line = ""
    with progress_lines(command):
        try:
            with _signals():
                yield
        except Interrupted as stop:
            line, code = interrupted_line(command, stop.signum, stop.stage), 128 + stop.signum
    if line:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
        sys.exit(code)
