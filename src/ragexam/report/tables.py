"""Console tables that stay readable in any terminal width (80 columns and up).

rich shrinks a table that is wider than the terminal by cutting cells (``0.6…``) and, with
``overflow="fold"``, by breaking names over lines; a table of numbers then loses digits or the
names of its rows.  :func:`print_fitted` never lets that happen:

* a table has **key columns** (what a row is: the pipeline, the question type, K) and **value
  columns** (the numbers).  Key columns come in one or more *variants*, e.g. the full pipeline
  name, then the short label ``P1`` that a legend (:func:`print_legend`) maps to the full name;
* the first variant whose table fits the console width in one piece is printed;
* when none fits, the last (most compact) variant is used and the value columns are split into
  consecutive blocks that each fit, every block repeating the key columns, so no number is cut and
  every row stays named.

:func:`pipeline_labels` gives the labels ``P1``, ``P2``, ... in pipeline order (``P1`` is the
baseline of the comparisons).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Union

__all__ = ["Column", "Keys", "print_fitted", "fits", "pipeline_labels", "pipeline_keys", "print_legend"]

#: a table cell: a string (printed as plain text, never as markup) or a rich Text
Cell = Any


@dataclass(frozen=True)
class Column:
    """A column header and its alignment."""

    header: str
    justify: str = "right"
    style: Optional[str] = None


@dataclass
class Keys:
    """One variant of the key columns: their headers and, per row, their cells."""

    columns: Sequence[Column]
    cells: Sequence[Sequence[Cell]] = field(default_factory=list)


def _text(cell: Cell):
    from rich.text import Text

    if cell is None:
        return Text("")
    return cell if isinstance(cell, Text) else Text(str(cell))


def _width(console, renderable) -> int:
    """The natural width of ``renderable`` (not capped at the console width)."""
    from rich.measure import Measurement

    return Measurement.get(console, console.options.update_width(10 ** 6), renderable).maximum


def fits(console, renderable) -> bool:
    """True when ``renderable`` needs no more than the console's width."""
    return _width(console, renderable) <= console.width


def _table(keys: Keys, value_columns: Sequence[Column], values: Sequence[Sequence[Cell]], cols: Sequence[int],
           sections: Sequence[int], title: Optional[str], table_kw: Dict[str, Any]):
    from rich import box
    from rich.table import Table

    kw = {"box": box.SIMPLE_HEAD, "title_justify": "left", "pad_edge": False, "collapse_padding": True,
          **table_kw}
    table = Table(title=title, **kw)
    for c in keys.columns:
        table.add_column(c.header, justify=c.justify, style=c.style, no_wrap=True)
    for i in cols:
        c = value_columns[i]
        table.add_column(c.header, justify=c.justify, style=c.style, no_wrap=True)
    ends = set(sections)
    for r, row in enumerate(values):
        key_cells = keys.cells[r] if r < len(keys.cells) else [""] * len(keys.columns)
        table.add_row(*[_text(c) for c in key_cells], *[_text(row[i]) for i in cols])
        if r in ends and r < len(values) - 1:
            table.add_section()
    return table


def _blocks(console, keys: Keys, value_columns, values, sections, table_kw) -> List[List[int]]:
    """Value-column indices grouped into blocks that each fit beside the key columns."""
    blocks: List[List[int]] = []
    current: List[int] = []
    for i in range(len(value_columns)):
        trial = current + [i]
        if current and not fits(console, _table(keys, value_columns, values, trial, sections, None, table_kw)):
            blocks.append(current)
            current = [i]
        else:
            current = trial
    if current or not blocks:
        blocks.append(current)
    if len(blocks) > 1:
        # the same number of blocks, with the columns spread evenly (11 columns as 6 + 5, not 10 + 1)
        n, total = len(blocks), len(value_columns)
        size = -(-total // n)
        even = [list(range(i, min(i + size, total))) for i in range(0, total, size)]
        if len(even) == n and all(fits(console, _table(keys, value_columns, values, b, sections, None, table_kw))
                                  for b in even):
            return even
    return blocks


def print_fitted(console, *, title: Optional[str], keys: Union[Keys, Sequence[Keys]],
                 value_columns: Sequence[Column], values: Sequence[Sequence[Cell]], sections: Sequence[int] = (),
                 **table_kw: object) -> int:
    """Print a table of ``values`` (one list of cells per row) under ``value_columns``, named by the first
    variant of ``keys`` that fits the console in one piece (else the last variant, split into blocks of
    value columns).  ``sections``: row indices after which a separator line is drawn.  The title is printed
    above the first block.  Returns the number of blocks printed."""
    variants = [keys] if isinstance(keys, Keys) else list(keys)
    for chosen in variants:
        blocks = _blocks(console, chosen, value_columns, values, sections, table_kw)
        if len(blocks) == 1:
            break
    if title:
        # printed apart from the table, so it wraps at the console's width, not at the table's
        from rich.text import Text

        console.print(Text(title, style="table.title", justify="left"))
    for cols in blocks:
        console.print(_table(chosen, value_columns, values, cols, sections, None, table_kw))
    return len(blocks)


def pipeline_labels(names: Sequence[str]) -> Dict[str, str]:
    """``{name: "P1", ...}`` in the given order (the first pipeline is the baseline)."""
    return {name: f"P{i + 1}" for i, name in enumerate(dict.fromkeys(names))}


def pipeline_keys(rows: Sequence[Optional[tuple]], extra: Sequence[Column] = (),
                  extra_cells: Sequence[Sequence[Cell]] = ()) -> List[Keys]:
    """The two key variants of a table whose rows belong to pipelines: ``rows[i]`` is ``(label, name)`` or
    ``(label, name, tag)`` (``None``: the row continues the pipeline above), shown as ``P1 name tag`` and then as
    ``P1 tag`` (a tag such as ``[produced nothing]`` stays when the name is dropped to fit); ``extra`` key columns
    (type, K, ...) follow with their ``extra_cells`` per row."""
    from rich.text import Text

    full, short = [], []
    for i, row in enumerate(rows):
        more = list(extra_cells[i]) if extra_cells else []
        if row is None:
            full.append(["", *more])
            short.append(["", *more])
            continue
        label, name, tag = (*row, "") if len(row) == 2 else row
        t = Text(label, style="bold")
        t.append(" " + str(name) + tag)
        full.append([t, *more])
        t = Text(label, style="bold")
        t.append(tag)
        short.append([t, *more])
    return [Keys([Column("pipeline", "left"), *extra], full), Keys([Column("", "left"), *extra], short)]


def print_legend(console, labels: Dict[str, str], *, title: str = "Pipelines", baseline: bool = True) -> None:
    """The legend of the short labels: one line per pipeline, ``P1  full name``.

    Each line is printed whole (``soft_wrap``): a long name (an endpoint URL, say) is wrapped by the
    terminal, never cut, and copies back as one piece."""
    from rich.text import Text

    head = Text(title, style="bold")
    if baseline and len(labels) > 1:
        first = next(iter(labels.values()))
        head.append(f" ({first} is the baseline of the comparisons)", style="dim")
    console.print(head)
    for name, label in labels.items():
        line = Text(f"  {label:<4}", style="bold")
        line.append(str(name))
        console.print(line, soft_wrap=True)
