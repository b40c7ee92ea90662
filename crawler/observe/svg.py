"""The report's charts, drawn as inline SVG: horizontal bars, and columns over time.

Presentation attributes only (``fill``, ``font-size``): no ``style`` attribute, no script, so the
report's Content-Security-Policy can forbid inline styles other than its one stylesheet. Every
text is escaped; each chart has a ``<title>`` for screen readers.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

__all__ = ["bars", "columns", "number"]

INK, MUTED, ACCENT, WARN = "#1f2933", "#616e7c", "#2f6fb0", "#c0392b"


def number(value: float) -> str:
    """1234567 -> '1,234,567'; 0.25 -> '0.25'; 1234.5 -> '1,234.5'."""
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.3g}" if abs(value) < 1 else f"{value:,.1f}"


def bars(title: str, rows: Sequence[tuple[str, float]], *, unit: str = "", width: int = 640) -> str:
    """A horizontal bar per row: its label, a bar as long as its share of the largest, its
    value."""
    if not rows:
        return f'<p class="none">{escape(title)}: none.</p>'
    row_h, label_w, value_w = 22, 220, 90
    height = row_h * len(rows) + 8
    top = max(value for _, value in rows) or 1
    span = width - label_w - value_w
    parts = [_open(title, width, height)]
    for i, (label, value) in enumerate(rows):
        y = 4 + i * row_h
        length = max(1.0, span * value / top) if value else 0.0
        shown = label if len(label) <= 34 else label[:33] + "…"
        parts.append(
            f'<text x="{label_w - 6}" y="{y + 15}" text-anchor="end" font-size="12" '
            f'fill="{INK}"><title>{escape(label)}</title>{escape(shown)}</text>'
            f'<rect x="{label_w}" y="{y + 3}" width="{length:.1f}" height="{row_h - 6}" '
            f'fill="{WARN if label == "error" else ACCENT}" rx="2"/>'
            f'<text x="{label_w + length + 6:.1f}" y="{y + 15}" font-size="12" '
            f'fill="{MUTED}">{escape(number(value))}{escape(unit)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def columns(
    title: str,
    points: Sequence[tuple[float, float, float]],
    *,
    x_label: str,
    width: int = 640,
    height: int = 200,
    ceiling: float | None = None,
) -> str:
    """A column per point (x, total, marked): `total` in blue, its `marked` part (errors) in red
    at the foot; the x axis labelled at its ends, the y axis at its top (`ceiling`, else the
    largest total)."""
    if not points:
        return f'<p class="none">{escape(title)}: none.</p>'
    left, bottom, top_pad = 56, 28, 10
    plot_w, plot_h = width - left - 10, height - bottom - top_pad
    top = ceiling if ceiling is not None else max(total for _, total, _ in points) or 1
    step = plot_w / len(points)
    parts = [_open(title, width, height)]
    for i, (_, total, marked) in enumerate(points):
        x = left + i * step
        h = plot_h * min(total, top) / top
        m = plot_h * min(marked, top) / top
        base = top_pad + plot_h
        if h:
            parts.append(f'<rect x="{x:.2f}" y="{base - h:.2f}" width="{max(step - 0.5, 0.5):.2f}"'
                         f' height="{h:.2f}" fill="{ACCENT}"/>')  # fmt: skip
        if m:
            parts.append(f'<rect x="{x:.2f}" y="{base - m:.2f}" width="{max(step - 0.5, 0.5):.2f}"'
                         f' height="{m:.2f}" fill="{WARN}"/>')  # fmt: skip
    axis_y = top_pad + plot_h
    first, last = points[0][0], points[-1][0]
    parts.append(
        f'<line x1="{left}" y1="{axis_y}" x2="{left + plot_w}" y2="{axis_y}" stroke="{MUTED}"/>'
        f'<line x1="{left}" y1="{top_pad}" x2="{left}" y2="{axis_y}" stroke="{MUTED}"/>'
        f'<text x="{left - 6}" y="{top_pad + 10}" text-anchor="end" font-size="11" '
        f'fill="{MUTED}">{escape(number(top))}</text>'
        f'<text x="{left - 6}" y="{axis_y}" text-anchor="end" font-size="11" fill="{MUTED}">0'
        f'</text><text x="{left}" y="{height - 8}" font-size="11" fill="{MUTED}">'
        f"{escape(number(first))}</text>"
        f'<text x="{left + plot_w}" y="{height - 8}" text-anchor="end" font-size="11" '
        f'fill="{MUTED}">{escape(number(last))}</text>'
        f'<text x="{left + plot_w / 2:.0f}" y="{height - 8}" text-anchor="middle" '
        f'font-size="11" fill="{MUTED}">{escape(x_label)}</text></svg>'
    )
    return "".join(parts)


def _open(title: str, width: int, height: int) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}"><title>{escape(title)}</title>'
    )
