"""The child process of :class:`ragexam.exec.beside.Beside` (run as a script, not imported).

Reads from stdin the parent's ``sys.path`` and then ``(fn, args)`` (pickles), and writes ``pickle(fn(*args))`` to
stdout.  Its own folder is taken off ``sys.path`` before anything else is imported, so a module of ``ragexam.exec``
can never stand in for a standard one.
"""

import sys

del sys.path[0]  # this script's folder

import pickle  # noqa: E402


def main() -> None:
    stdin = sys.stdin.buffer
    parent = pickle.load(stdin)
    sys.path[:] = parent + [p for p in sys.path if p not in parent]
    fn, args = pickle.load(stdin)
    out = pickle.dumps(fn(*args))
    sys.stdout.buffer.write(out)
    sys.stdout.buffer.flush()


if __name__ == "__main__":
    main()
