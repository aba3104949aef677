"""Hand-written inline SVG charts for the HTML report (no plotting dependency).

Why hand-written SVG (and not matplotlib or an inlined JS charting library):

* **Korean text.** Labels are drawn by the browser with the page's CSS font stack (Noto Sans KR,
  Nanum Gothic, Malgun Gothic, system fallbacks).  matplotlib renders text at *build* time with
  its own font lookup; its default DejaVu Sans has no Hangul, so type names and pipeline names
  written in Korean would become empty boxes unless a Korean font happened to be configured on
  the machine that ran ``ragexam``, or every glyph would be embedded as a path.
* **Size and start-up.** A chart here is 3-15 KB of text; matplotlib's SVG backend writes
  20-60 KB per figure, and importing it costs about a second.  A JS charting library inlined
  (Chart.js, ECharts, Plotly) adds 200 KB-3.5 MB before the first chart.
* **Static and robust.** The SVG is in the HTML: it renders without JavaScript, prints, and
  opens offline.  Native ``<title>`` elements give hover tooltips with the exact numbers.
* The charts needed are few and simple (lines over K, grouped bars with whiskers, a heat
  matrix), so the code stays small.

Every function returns one ``<svg>`` element as a string; every text that comes from the user
(names, labels) is XML-escaped here.  Colours come from the Okabe-Ito palette, which stays
distinguishable under the common colour-vision deficiencies.
"""

from __future__ import annotations

import math
import unicodedata
from html import escape
from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from ragexam import fmt

__all__ = ["PALETTE", "PALETTE_CSS", "color", "color_class", "line_chart", "bar_chart", "heatmap", "nice_max",
           "text_width", "wrap_label"]

#: Okabe-Ito colours (blue, orange, green, purple, sky, vermilion, yellow, black).
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#B8A800", "#333333")

_W, _H = 360, 240
_M = {"left": 46, "right": 12, "top": 30, "bottom": 44}


def color(i: int) -> str:
    """The colour of series ``i`` (cycling through :data:`PALETTE`)."""
    return PALETTE[i % len(PALETTE)]


def color_class(i: int) -> str:
    """The CSS class (:data:`PALETTE_CSS`) giving an HTML element the background of series ``i``: pages that
    forbid inline styles (``ragexam serve``'s content security policy) colour a legend with it."""
    return f"c{i % len(PALETTE)}"


#: the background of each :func:`color_class`
PALETTE_CSS = "".join(f".c{i}{{background:{c}}}" for i, c in enumerate(PALETTE))


def _e(x: object) -> str:
    return escape(str(x), quote=True)


#: font sizes (px) of the label classes, as in the report's CSS
TICK_PX, TITLE_PX, CELL_PX = 10.5, 13.0, 11.5
#: line height (px) of wrapped tick labels
LINE_PX = 12.0

_NARROW = set("iIl.,:;|!'`()[]{} ")
_WIDE_LATIN = set("mwMW@%")


def text_width(text: str, size: float) -> float:
    """An upper estimate of the width in px of ``text`` at font size ``size``: wide (Hangul, CJK) characters
    count 1 em, narrow ones 0.35 em, capitals and ``m``/``w`` 0.8 em, the rest 0.6 em — a little more than the
    common sans-serif faces of the report's font stack need, so a label laid out with it does not overlap
    its neighbour in the browser."""
    em = 0.0
    for ch in str(text):
        if unicodedata.east_asian_width(ch) in ("W", "F"):
            em += 1.0
        elif ch in _NARROW:
            em += 0.35
        elif ch.isupper() or ch in _WIDE_LATIN:
            em += 0.8
        else:
            em += 0.6
    return em * size


_BREAK_AFTER = set(" _-/|:+?&=,")


def _pieces(text: str) -> List[str]:
    """``text`` cut after each break character (the parts a label may wrap between)."""
    pieces: List[str] = []
    cur = ""
    for ch in text:
        cur += ch
        if ch in _BREAK_AFTER:
            pieces.append(cur)
            cur = ""
    if cur:
        pieces.append(cur)
    return pieces


def wrap_label(text: str, max_width: float, size: float = TICK_PX) -> List[str]:
    """``text`` in lines of at most ``max_width`` px (by :func:`text_width`), broken after a space, ``_``,
    ``-``, ``/``, ``|``, ``:`` and the like (``retrieval_miss`` becomes ``retrieval_`` / ``miss``), and inside
    a word only when the word alone is too wide.  Nothing is dropped: the lines joined (spaces at the breaks
    restored) give ``text`` back."""
    lines: List[str] = []
    pieces = _pieces(str(text))
    line = ""
    for piece in pieces:
        if line and text_width((line + piece).rstrip(), size) > max_width:
            lines.append(line)
            line = ""
        while text_width(piece.rstrip(), size) > max_width and len(piece) > 1:
            # a single piece wider than a line: cut it by characters
            n = len(piece)
            while n > 1 and text_width(piece[:n], size) > max_width:
                n -= 1
            if line:
                lines.append(line)
                line = ""
            lines.append(piece[:n])
            piece = piece[n:]
        line += piece
    if line or not lines:
        lines.append(line)
    return lines


def _lines_svg(lines: Sequence[str], x: float, y: float, anchor: str, css: str, extra: str = "") -> str:
    """One ``<text>`` whose lines are ``<tspan>`` s (trailing spaces at breaks kept inside the tspan, so
    ``textContent`` gives the label back whole)."""
    spans = "".join(f'<tspan x="{x:.1f}" dy="{0 if i == 0 else LINE_PX:g}">{_e(t)}</tspan>'
                    for i, t in enumerate(lines))
    return f'<text class="{css}" x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}"{extra}>{spans}</text>'


def nice_max(value: float) -> float:
    """The smallest "nice" axis maximum >= value (1, 2, 2.5 or 5 times a power of ten)."""
    if value <= 0 or not math.isfinite(value):
        return 1.0
    exp = math.floor(math.log10(value))
    for m in (1, 2, 2.5, 5, 10):
        cand = m * 10 ** exp
        if cand >= value - 1e-12:
            return float(cand)
    return float(10 ** (exp + 1))


def _ticks(y_max: float, n: int = 5) -> List[float]:
    step = y_max / n
    return [round(i * step, 10) for i in range(n + 1)]


def _tick_label(v: float, y_max: float, percent: bool) -> str:
    if percent:
        return f"{v * 100:.0f}%"
    if y_max <= 1.0:
        return f"{v:.1f}" if round(v * 10) == v * 10 else f"{v:.2f}"
    return f"{v:g}"


def _left_margin(y_max: float, percent: bool) -> int:
    """Room left of the y axis: the rotated y label (centred at x = 12, about 8 px either side), a 4 px gap,
    the widest tick label and 5 px."""
    widest = max(text_width(_tick_label(v, y_max, percent), TICK_PX) for v in _ticks(y_max))
    return max(_M["left"], int(math.ceil(12 + 8 + 4 + widest + 5)))


def _title_lines(title: str, width: float) -> List[str]:
    return wrap_label(title, width - 12, TITLE_PX)


def _open(css_class: str, width: int, height: int, title: str, title_lines: Sequence[str],
          data_attrs: Mapping[str, str]) -> List[str]:
    """The opening ``<svg>`` of a chart (its class, size, ``data-`` attributes), its title and the title's lines."""
    attrs = "".join(f' data-{_e(k)}="{_e(v)}"' for k, v in data_attrs.items())
    spans = "".join(f'<tspan x="{width / 2:.1f}" dy="{0 if i == 0 else 16}">{_e(t)}</tspan>'
                    for i, t in enumerate(title_lines))
    return [f'<svg class="chart {css_class}" width="{width}" '
            f'height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="{_e(title)}"{attrs}>',
            f"<title>{_e(title)}</title>",
            f'<text class="ctitle" x="{width / 2:.1f}" y="18" text-anchor="middle">{spans}</text>']


def _frame(title: str, y_label: str, x_label: str, width: int, height: int, y_max: float,
           percent: bool, css_class: str, data_attrs: Dict[str, str],
           x_label_lines: int = 1) -> Tuple[List[str], Dict[str, float]]:
    """The chart's box, title, y grid and axis labels.  A long title wraps (the plot moves down and the
    chart grows by as much); ``x_label_lines`` lines of x tick labels get room under the axis (the chart
    grows for each line past two)."""
    title_lines = _title_lines(title, width)
    extra_top = (len(title_lines) - 1) * 16
    extra_bottom = max(0, x_label_lines - 2) * LINE_PX
    height = int(math.ceil(height + extra_top + extra_bottom))
    ticks = [(v, _tick_label(v, y_max, percent)) for v in _ticks(y_max)]
    left, right = _left_margin(y_max, percent), width - _M["right"]
    top, bottom = _M["top"] + extra_top, height - _M["bottom"] - extra_bottom
    parts = _open(css_class, width, height, title, title_lines, data_attrs)
    for v, label in ticks:
        y = bottom - (bottom - top) * v / y_max
        parts.append(f'<line class="grid" x1="{left}" x2="{right}" y1="{y:.1f}" y2="{y:.1f}"/>')
        parts.append(f'<text class="tick" x="{left - 5}" y="{y + 3.5:.1f}" text-anchor="end">{label}</text>')
    parts.append(f'<line class="axis" x1="{left}" x2="{right}" y1="{bottom}" y2="{bottom}"/>')
    parts.append(f'<line class="axis" x1="{left}" x2="{left}" y1="{top}" y2="{bottom}"/>')
    if x_label:
        parts.append(f'<text class="alabel" x="{(left + right) / 2:.1f}" y="{height - 6}" '
                     f'text-anchor="middle">{_e(x_label)}</text>')
    cy = (top + bottom) / 2
    parts.append(f'<text class="alabel" x="12" y="{cy:.1f}" text-anchor="middle" '
                 f'transform="rotate(-90 12 {cy:.1f})">{_e(y_label)}</text>')
    return parts, {"left": left, "right": right, "top": top, "bottom": bottom}


def line_chart(title: str, x_labels: Sequence[str], series: Sequence[Tuple[str, Sequence[Optional[float]]]], *,
               y_label: str = "", x_label: str = "K", y_max: float = 1.0, width: int = _W, height: int = _H,
               value_name: str = "", data_attrs: Optional[Dict[str, str]] = None) -> str:
    """Lines over categorical x positions (e.g. K = 1, 3, 5, 10), one per series.

    ``series`` is ``[(name, [y for each x label, or None for a gap]), ...]``; series ``i`` is
    drawn in :func:`color` ``(i)``.  Points carry tooltips ``name: value_name@x = y``.
    """
    parts, f = _frame(title, y_label, x_label, width, height, y_max, False, "line", data_attrs or {})
    n = len(x_labels)
    span = f["right"] - f["left"]
    pad = min(24.0, span / (2 * max(n, 1)))

    def px(i: int) -> float:
        return f["left"] + pad + (span - 2 * pad) * (i / (n - 1) if n > 1 else 0.5)

    def py(v: float) -> float:
        v = min(max(v, 0.0), y_max)
        return f["bottom"] - (f["bottom"] - f["top"]) * v / y_max

    for i, lab in enumerate(x_labels):
        parts.append(f'<text class="tick" x="{px(i):.1f}" y="{f["bottom"] + 14}" text-anchor="middle">{_e(lab)}</text>')
    for si, (name, ys) in enumerate(series):
        c = color(si)
        seg: List[str] = []
        segments: List[List[str]] = []
        for i, y in enumerate(ys):
            if y is None:
                if seg:
                    segments.append(seg)
                seg = []
                continue
            seg.append(f"{px(i):.1f},{py(y):.1f}")
        if seg:
            segments.append(seg)
        parts.append(f'<g class="series" data-series="{_e(name)}">')
        for s in segments:
            if len(s) > 1:
                parts.append(f'<polyline fill="none" stroke="{c}" stroke-width="2" points="{" ".join(s)}"/>')
        for i, y in enumerate(ys):
            if y is None:
                continue
            parts.append(f'<circle cx="{px(i):.1f}" cy="{py(y):.1f}" r="3.5" fill="{c}">'
                         f"<title>{_e(name)}: {_e(value_name)}@{_e(x_labels[i])} = {fmt.num(y)}</title></circle>")
        parts.append("</g>")
    parts.append("</svg>")
    return "".join(parts)


@dataclass(frozen=True)
class BarAxes:
    """The frame of :func:`bar_chart`: the axis labels, the top of the y axis (``None``: a nice maximum over the
    values and whiskers), ticks as percentages, the size, and ``data-`` attributes of the ``<svg>``."""

    y_label: str = ""
    x_label: str = ""
    y_max: Optional[float] = None
    percent: bool = False
    width: int = _W
    height: int = _H
    data_attrs: Optional[Dict[str, str]] = None


def bar_chart(title: str, groups: Sequence[str],
              series: Sequence[Tuple[str, Sequence[Optional[Tuple[float, Optional[float], Optional[float]]]]]], *,
              tooltips: Optional[Sequence[Sequence[str]]] = None, marker_after: Optional[int] = None,
              marker_label: str = "", **axes: object) -> str:
    """Grouped bars with optional whiskers.

    ``series`` is ``[(name, [(value, low, high) or None for each group]), ...]``; ``low``/``high``
    (a confidence interval) draw a whisker when both are given.  ``tooltips[s][g]`` overrides the hover text
    of a bar.  ``marker_after=i`` draws a dashed vertical line after group ``i`` labelled ``marker_label``.
    ``axes``: the keywords of :class:`BarAxes` (``y_label``, ``x_label``, ``y_max``, ``percent``, ``width``,
    ``height``, ``data_attrs``).
    """
    ax = BarAxes(**axes)  # type: ignore[arg-type]
    top_value = 0.0
    for _, vals in series:
        for v in vals:
            if v is not None:
                top_value = max(top_value, v[0], v[2] if v[2] is not None else 0.0)
    y_max = ax.y_max if ax.y_max is not None else nice_max(top_value)
    ng, ns = max(len(groups), 1), max(len(series), 1)
    gw = (ax.width - _left_margin(y_max, ax.percent) - _M["right"]) / ng
    group_lines = [wrap_label(str(g), gw - 4) for g in groups]
    parts, f = _frame(title, ax.y_label, ax.x_label, ax.width, ax.height, y_max, ax.percent, "bars",
                      ax.data_attrs or {}, x_label_lines=max((len(g) for g in group_lines), default=1))
    bw = min(28.0, gw * 0.8 / ns)

    def py(v: float) -> float:
        v = min(max(v, 0.0), y_max)
        return f["bottom"] - (f["bottom"] - f["top"]) * v / y_max

    # group labels, wrapped to the group's width (never cut)
    for gi, lines in enumerate(group_lines):
        cx = f["left"] + gw * (gi + 0.5)
        parts.append(_lines_svg(lines, cx, f["bottom"] + 14, "middle", "tick"))
    if marker_after is not None and 0 <= marker_after < ng - 1:
        mx = f["left"] + gw * (marker_after + 1)
        parts.append(f'<line class="marker" x1="{mx:.1f}" x2="{mx:.1f}" y1="{f["top"]}" y2="{f["bottom"]}"/>')
        parts.append(f'<text class="mlabel" x="{mx + 4:.1f}" y="{f["top"] + 10}">{_e(marker_label)}</text>')
    for si, (name, vals) in enumerate(series):
        c = color(si)
        parts.append(f'<g class="series" data-series="{_e(name)}">')
        for gi, v in enumerate(vals):
            if v is None:
                continue
            value, lo, hi = v
            x = f["left"] + gw * gi + (gw - bw * ns) / 2 + bw * si
            y = py(value)
            h = f["bottom"] - y
            if tooltips is not None:
                tip = tooltips[si][gi]
            else:
                ci = f" (95% CI {fmt.num(lo)} to {fmt.num(hi)})" if lo is not None and hi is not None else ""
                tip = f"{name} · {groups[gi]}: {fmt.num(value)}{ci}"
            parts.append(f'<rect class="bar" x="{x + 1:.1f}" y="{y:.1f}" width="{max(bw - 2, 1):.1f}" '
                         f'height="{max(h, 0.0):.1f}" fill="{c}"><title>{_e(tip)}</title></rect>')
            if lo is not None and hi is not None:
                xm = x + bw / 2
                y1, y2 = py(lo), py(hi)
                parts.append(f'<path class="whisker" d="M{xm:.1f},{y1:.1f}V{y2:.1f}M{xm - 3:.1f},{y1:.1f}'
                             f'h6M{xm - 3:.1f},{y2:.1f}h6"/>')
        parts.append("</g>")
    parts.append("</svg>")
    return "".join(parts)


def heatmap(title: str, rows: Sequence[str], cols: Sequence[str], counts: Sequence[Sequence[int]], *,
            width: int = _W, data_attrs: Optional[Dict[str, str]] = None,
            links: Optional[Sequence[Sequence[Optional[str]]]] = None) -> str:
    """A count matrix (rows x cols) with cells shaded by their share of the row total.

    Each cell shows its count; the tooltip adds the share of the row.  Used for the
    stage-attribution matrix (question types x stages).  ``links[r][c]`` (optional) makes a cell a link to
    that address (``ragexam serve``: the cell opens its questions).

    Labels are never cut: a column is as wide as the longest unbreakable part of its label (at least
    60 px) and the label wraps at ``_`` and spaces (``retrieval_`` / ``miss``); row labels and the title
    wrap too, and the chart grows to hold them.  ``width`` is the least width; the chart is wider when
    its columns need it.
    """
    cols = [str(c) for c in cols]
    rows = [str(r) for r in rows]

    longest = max([0.0] + [text_width(p.rstrip(), TICK_PX) for c in cols for p in _pieces(c)])
    cw = max(60.0, min(longest, 160.0) + 10)
    col_lines = [wrap_label(c, cw - 6, TICK_PX) for c in cols]
    label_max = 180.0
    row_lines = [wrap_label(r, label_max, TICK_PX) for r in rows]
    label_w = max([60.0] + [text_width(line, TICK_PX) for lines in row_lines for line in lines]) + 12
    width = int(math.ceil(max(width, label_w + cw * max(len(cols), 1) + 10)))
    title_lines = _title_lines(title, width)
    head_lines = max((len(x) for x in col_lines), default=1)
    top = 8 + 16 * len(title_lines) + LINE_PX * head_lines + 6
    heights = [max(26.0, LINE_PX * len(x) + 10) for x in row_lines]
    height = int(math.ceil(top + sum(heights) + 10))
    parts = _open("heat", width, height, title, title_lines, data_attrs or {})
    first_line = top - 6 - LINE_PX * (head_lines - 1) - 3
    for ci, lines in enumerate(col_lines):
        # bottom-aligned: a one-line label sits on the same line as the last line of a two-line one
        y = first_line + LINE_PX * (head_lines - len(lines))
        parts.append(_lines_svg(lines, label_w + cw * (ci + 0.5), y, "middle", "tick col-label"))
    y = top
    for ri, r in enumerate(rows):
        h = heights[ri]
        total = sum(counts[ri]) or 1
        ly = y + h / 2 + 4 - LINE_PX * (len(row_lines[ri]) - 1) / 2
        parts.append(_lines_svg(row_lines[ri], label_w - 6, ly, "end", "tick row-label"))
        for ci, c in enumerate(cols):
            n = counts[ri][ci]
            share = n / total
            x = label_w + cw * ci
            fill = f"rgba(0,114,178,{0.08 + 0.85 * share:.3f})"
            fg = "#fff" if share > 0.5 else "#1a1a1a"
            href = links[ri][ci] if links is not None and n else None
            if href:
                parts.append(f'<a class="cell-link" href="{_e(href)}">')
            parts.append(f'<rect x="{x + 1:.1f}" y="{y + 1:.1f}" width="{cw - 2:.1f}" height="{h - 2:.1f}" '
                         f'fill="{fill}"><title>{_e(r)} · {_e(c)}: {n} ({fmt.percent(share)} of {_e(r)})'
                         f"</title></rect>")
            parts.append(f'<text class="cell" x="{x + cw / 2:.1f}" y="{y + h / 2 + 4:.1f}" '
                         f'text-anchor="middle" fill="{fg}">{n}</text>')
            if href:
                parts.append("</a>")
        y += h
    parts.append("</svg>")
    return "".join(parts)
