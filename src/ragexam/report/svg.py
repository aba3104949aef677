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
from html import escape
from typing import Dict, List, Optional, Sequence, Tuple

__all__ = ["PALETTE", "color", "line_chart", "bar_chart", "heatmap", "nice_max"]

#: Okabe-Ito colours (blue, orange, green, purple, sky, vermilion, yellow, black).
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#B8A800", "#333333")

_W, _H = 360, 240
_M = {"left": 46, "right": 12, "top": 30, "bottom": 44}


def color(i: int) -> str:
    """The colour of series ``i`` (cycling through :data:`PALETTE`)."""
    return PALETTE[i % len(PALETTE)]


def _e(x: object) -> str:
    return escape(str(x), quote=True)


def _num(x: float) -> str:
    """Compact coordinate text."""
    return f"{x:.1f}".rstrip("0").rstrip(".") if not float(x).is_integer() else str(int(x))


def _val(x: Optional[float], digits: int = 3) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}"


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


def _frame(title: str, y_label: str, x_label: str, width: int, height: int, y_max: float,
           percent: bool, css_class: str, data_attrs: Dict[str, str]) -> Tuple[List[str], Dict[str, float]]:
    left, right, top, bottom = _M["left"], width - _M["right"], _M["top"], height - _M["bottom"]
    attrs = "".join(f' data-{_e(k)}="{_e(v)}"' for k, v in data_attrs.items())
    parts = [f'<svg class="chart {css_class}" width="{width}" '
             f'height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="{_e(title)}"{attrs}>',
             f"<title>{_e(title)}</title>",
             f'<text class="ctitle" x="{width / 2:.1f}" y="18" text-anchor="middle">{_e(title)}</text>']
    for v in _ticks(y_max):
        y = bottom - (bottom - top) * v / y_max
        parts.append(f'<line class="grid" x1="{left}" x2="{right}" y1="{y:.1f}" y2="{y:.1f}"/>')
        parts.append(f'<text class="tick" x="{left - 5}" y="{y + 3.5:.1f}" text-anchor="end">'
                     f"{_tick_label(v, y_max, percent)}</text>")
    parts.append(f'<line class="axis" x1="{left}" x2="{right}" y1="{bottom}" y2="{bottom}"/>')
    parts.append(f'<line class="axis" x1="{left}" x2="{left}" y1="{top}" y2="{bottom}"/>')
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
                         f"<title>{_e(name)}: {_e(value_name)}@{_e(x_labels[i])} = {_val(y)}</title></circle>")
        parts.append("</g>")
    parts.append("</svg>")
    return "".join(parts)


def bar_chart(title: str, groups: Sequence[str],
              series: Sequence[Tuple[str, Sequence[Optional[Tuple[float, Optional[float], Optional[float]]]]]], *,
              y_label: str = "", x_label: str = "", y_max: Optional[float] = None, percent: bool = False,
              width: int = _W, height: int = _H, tooltips: Optional[Sequence[Sequence[str]]] = None,
              marker_after: Optional[int] = None, marker_label: str = "",
              data_attrs: Optional[Dict[str, str]] = None) -> str:
    """Grouped bars with optional whiskers.

    ``series`` is ``[(name, [(value, low, high) or None for each group]), ...]``; ``low``/``high``
    (a confidence interval) draw a whisker when both are given.  ``y_max`` defaults to a nice
    maximum over values and whiskers.  ``tooltips[s][g]`` overrides the hover text of a bar.
    ``marker_after=i`` draws a dashed vertical line after group ``i`` labelled ``marker_label``.
    """
    top_value = 0.0
    for _, vals in series:
        for v in vals:
            if v is not None:
                top_value = max(top_value, v[0], v[2] if v[2] is not None else 0.0)
    y_max = y_max if y_max is not None else nice_max(top_value)
    parts, f = _frame(title, y_label, x_label, width, height, y_max, percent, "bars", data_attrs or {})
    ng, ns = max(len(groups), 1), max(len(series), 1)
    gw = (f["right"] - f["left"]) / ng
    bw = min(28.0, gw * 0.8 / ns)

    def py(v: float) -> float:
        v = min(max(v, 0.0), y_max)
        return f["bottom"] - (f["bottom"] - f["top"]) * v / y_max

    # group labels (wrapped onto two lines when long)
    for gi, g in enumerate(groups):
        cx = f["left"] + gw * (gi + 0.5)
        label = str(g)
        max_chars = max(4, int(gw / 6.2))
        if len(label) <= max_chars:
            lines = [label]
        elif " " in label:
            cut = label.rfind(" ", 0, max_chars + 1)
            cut = cut if cut > 0 else label.find(" ")
            lines = [label[:cut], label[cut + 1:cut + 1 + max_chars]]
        else:
            lines = [label[:max_chars], label[max_chars:2 * max_chars]]
        for li, text in enumerate(lines):
            parts.append(f'<text class="tick" x="{cx:.1f}" y="{f["bottom"] + 14 + 11 * li}" '
                         f'text-anchor="middle">{_e(text)}</text>')
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
                ci = f" (95% CI {_val(lo)} to {_val(hi)})" if lo is not None and hi is not None else ""
                tip = f"{name} · {groups[gi]}: {_val(value)}{ci}"
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
            width: int = _W, data_attrs: Optional[Dict[str, str]] = None) -> str:
    """A count matrix (rows x cols) with cells shaded by their share of the row total.

    Each cell shows its count; the tooltip adds the share of the row.  Used for the
    stage-attribution matrix (question types x stages).
    """
    label_w = 96
    cell_h = 26
    top = 44
    height = top + cell_h * len(rows) + 10
    cw = (width - label_w - 10) / max(len(cols), 1)
    attrs = "".join(f' data-{_e(k)}="{_e(v)}"' for k, v in (data_attrs or {}).items())
    parts = [f'<svg class="chart heat" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img" aria-label="{_e(title)}"{attrs}>',
             f"<title>{_e(title)}</title>",
             f'<text class="ctitle" x="{width / 2:.1f}" y="16" text-anchor="middle">{_e(title)}</text>']
    for ci, c in enumerate(cols):
        parts.append(f'<text class="tick" x="{label_w + cw * (ci + 0.5):.1f}" y="{top - 8}" '
                     f'text-anchor="middle">{_e(str(c)[:14])}</text>')
    for ri, r in enumerate(rows):
        y = top + cell_h * ri
        total = sum(counts[ri]) or 1
        parts.append(f'<text class="tick" x="{label_w - 6}" y="{y + cell_h / 2 + 4:.1f}" '
                     f'text-anchor="end">{_e(str(r)[:16])}</text>')
        for ci, c in enumerate(cols):
            n = counts[ri][ci]
            share = n / total
            x = label_w + cw * ci
            fill = f"rgba(0,114,178,{0.08 + 0.85 * share:.3f})"
            fg = "#fff" if share > 0.5 else "#1a1a1a"
            parts.append(f'<rect x="{x + 1:.1f}" y="{y + 1}" width="{cw - 2:.1f}" height="{cell_h - 2}" '
                         f'fill="{fill}"><title>{_e(r)} · {_e(c)}: {n} ({share * 100:.0f}% of {_e(r)})'
                         f"</title></rect>")
            parts.append(f'<text class="cell" x="{x + cw / 2:.1f}" y="{y + cell_h / 2 + 4:.1f}" '
                         f'text-anchor="middle" fill="{fg}">{n}</text>')
    parts.append("</svg>")
    return "".join(parts)
