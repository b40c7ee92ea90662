"""The report as one self-contained HTML page: `render_page` (a `Digest`, and the crawl's stats
when they are known).

Nothing is loaded from elsewhere and nothing runs: charts are inline SVG (`crawler.observe.svg`),
the one stylesheet is inline and named by its hash in a strict Content-Security-Policy
(``default-src 'none'``), there is no script. Tables hold the top rows only.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from html import escape
from typing import Any

from crawler.observe.digest import Digest, Slot
from crawler.observe.svg import bars, columns, number

__all__ = ["render_page"]

COLUMNS = 160  # columns of the over-time charts at most (time buckets are merged to fit)

STYLE = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1f2933;margin:0;
background:#f5f7fa}
main{max-width:1040px;margin:0 auto;padding:24px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px}
.sub{color:#616e7c;margin:0 0 16px}
.cards{display:flex;flex-wrap:wrap;gap:10px}
.card{background:#fff;border:1px solid #d9e2ec;border-radius:6px;padding:10px 14px;min-width:120px}
.card b{display:block;font-size:20px}.card span{color:#616e7c;font-size:12px}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(480px,1fr));gap:16px}
section{background:#fff;border:1px solid #d9e2ec;border-radius:6px;padding:4px 16px 12px}
table{border-collapse:collapse;width:100%;font-size:13px}
td,th{text-align:left;padding:3px 6px;border-bottom:1px solid #eef2f6;vertical-align:top}
td.n,th.n{text-align:right;white-space:nowrap;width:1%}
table.kv{width:auto;min-width:50%}
td.u{word-break:break-all}
.none{color:#616e7c}svg{max-width:100%;height:auto}
"""


def render_page(digest: Digest, stats: dict[str, Any] | None, *, title: str) -> str:
    """The report's HTML: `digest`'s aggregates, and `stats` (``--stats``'s JSON) if any."""
    digest_ = hashlib.sha256(STYLE.encode()).digest()
    csp = (f"default-src 'none'; style-src 'sha256-{base64.b64encode(digest_).decode()}'; "
           "img-src 'none'; base-uri 'none'; form-action 'none'")  # fmt: skip
    made = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    slowest = _table(("time (ms)", "URL"), sorted(digest.slowest, reverse=True),
                     lambda v: number(round(v, 1)))  # fmt: skip
    largest = _table(("bytes", "URL"), sorted(digest.largest, reverse=True), number)
    body = [
        f"<h1>{escape(title)}</h1><p class=sub>{number(digest.pages)} results; "
        f"report made {made}</p>",
        _cards(digest, stats),
        _over_time(digest),
        '<div class="grid">',
        _section("Statuses", bars("Results by HTTP status", _top(digest.statuses, 12))),
        _section("Errors by kind", bars("Errors by kind", _top(digest.errors, 12))),
        _section(
            "Depth",
            bars(
                "Results by depth",
                sorted(
                    ((str(d), float(n)) for d, n in digest.depths.items()), key=lambda r: int(r[0])
                )[:20],
            ),
        ),
        _section("Content types", bars("Results by content type", _top(digest.types, 10))),
        _section("Top hosts by pages", bars("Results by host", _top(digest.host_pages, 15))),
        _section(
            "Top hosts by time",
            bars(
                "Seconds of fetching, by host",
                [(h, round(ms / 1000, 1)) for h, ms in digest.host_ms.most_common(15)],
                unit=" s",
            ),
        ),
        "</div>",
        _section("Slowest pages", slowest),
        _section("Largest pages", largest),
        _duplicates(digest),
        _sieve(stats),
        _focus(digest, stats),
    ]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{STYLE}</style></head>"
        f"<body><main>{''.join(body)}</main></body></html>\n"
    )


def _top(counter: Any, n: int) -> list[tuple[str, float]]:
    return [(str(k), float(v)) for k, v in counter.most_common(n)]


def _section(heading: str, content: str) -> str:
    return f"<section><h2>{escape(heading)}</h2>{content}</section>"


def _cards(digest: Digest, stats: dict[str, Any] | None) -> str:
    span = digest.end - digest.start if digest.start is not None else 0.0
    elapsed = float(stats.get("elapsed_s", span)) if stats else span
    errors = sum(digest.errors.values())
    cards = [
        ("results", number(digest.pages)),
        ("bytes", number(digest.bytes)),
        ("seconds", number(round(elapsed, 1))),
        ("results/s", number(round(digest.pages / elapsed, 1)) if elapsed > 0 else "-"),
        ("errors", number(errors)),
        ("duplicates", number(digest.exact + digest.near)),
    ]
    if digest.rendered:
        cards.append(("rendered", number(digest.rendered)))
    inner = "".join(f"<div class=card><b>{v}</b><span>{k}</span></div>" for k, v in cards)
    return f'<div class="cards">{inner}</div>'


def _merged(digest: Digest) -> tuple[list[tuple[float, Slot]], float]:
    """The timeline in at most `COLUMNS` buckets, and a bucket's width in seconds."""
    timeline = digest.timeline()
    per = max(1, -(-len(timeline) // COLUMNS))
    merged = []
    for i in range(0, len(timeline), per):
        group = timeline[i : i + per]
        slot = Slot()
        for _, s in group:
            slot.pages += s.pages
            slot.errors += s.errors
            slot.scored += s.scored
            slot.relevant += s.relevant
        merged.append((group[0][0], slot))
    return merged, float(digest.width * per)


def _over_time(digest: Digest) -> str:
    merged, width = _merged(digest)
    minutes = merged and merged[-1][0] > 600
    scale, unit = (60.0, "minutes") if minutes else (1.0, "seconds")
    points = [(t / scale, float(s.pages), float(s.errors)) for t, s in merged]
    chart = columns(f"Results per {number(width)} s (errors in red)", points, width=980,
                    x_label=f"{unit} since the first result; results per {number(width)} s "
                            "(errors in red)")  # fmt: skip
    return _section("Results over time", chart)


def _table(heads: Sequence[str], rows: Iterable[tuple[Any, str]], show: Any) -> str:
    body = "".join(f'<tr><td class="n">{escape(show(v))}</td><td class="u">{escape(url)}</td></tr>'
                   for v, url in rows)  # fmt: skip
    if not body:
        return '<p class="none">none.</p>'
    return (f'<table><tr><th class="n">{escape(heads[0])}</th><th>{escape(heads[1])}</th></tr>'
            f"{body}</table>")  # fmt: skip


def _duplicates(digest: Digest) -> str:
    text = (f"<p>{number(digest.exact)} exact and {number(digest.near)} near duplicates "
            "(pages whose content an earlier page had; <code>--dedup</code>).</p>")  # fmt: skip
    rows = [(n, url) for url, n in digest.copied.most_common(10)]
    table = _table(("copies", "the page they copy"), rows, number) if rows else ""
    return _section("Duplicates", text + table)


def _sieve(stats: dict[str, Any] | None) -> str:
    sieve = (stats or {}).get("sieve")
    if not isinstance(sieve, dict):
        return _section("The Sieve", '<p class="none">not known: the crawl\'s stats were not '
                                     "given (<code>--stats FILE</code>).</p>")  # fmt: skip
    names = (("kind", "kind"), ("count", "URLs taken in"), ("approx_items", "URLs (estimated)"),
             ("stages", "stages"), ("size_in_bytes", "bytes"),
             ("false_positive_bound", "false-positive bound"),
             ("false_positive_estimate", "false-positive rate (estimated)"),
             ("rescued_false_positives", "false positives rescued"))  # fmt: skip
    rows = "".join(
        f'<tr><td>{escape(label)}</td><td class="n">'
        f"{escape(number(v) if isinstance(v, int | float) else str(v))}</td></tr>"
        for key, label in names
        if (v := sieve.get(key)) is not None
    )
    fill = ""
    bound, estimate = sieve.get("false_positive_bound"), sieve.get("false_positive_estimate")
    if isinstance(bound, int | float) and isinstance(estimate, int | float) and bound > 0:
        fill = bars("False-positive rate against its bound",
                    [("bound", float(bound)), ("estimated now", float(estimate))])  # fmt: skip
    return _section("The Sieve", f'<table class="kv">{rows}</table>{fill}')


def _focus(digest: Digest, stats: dict[str, Any] | None) -> str:
    if not digest.scored:
        return ""
    merged, width = _merged(digest)
    scale, unit = (60.0, "minutes") if merged and merged[-1][0] > 600 else (1.0, "seconds")
    points = [(t / scale, s.relevant / s.scored if s.scored else 0.0, 0.0) for t, s in merged]
    rate = (stats or {}).get("harvest_rate")
    rate = rate if rate is not None else sum(s.relevant for _, s in merged) / digest.scored
    chart = columns(
        "Harvest rate over time",
        points,
        ceiling=1.0,
        width=980,
        x_label=f"{unit}; relevant share of the pages scored per {number(width)} s",
    )
    hist = bars("Pages by relevance", [(f"{i / 10:.1f}–{(i + 1) / 10:.1f}", float(n))
                                       for i, n in enumerate(digest.relevance)])  # fmt: skip
    head = (f"<p>harvest rate {number(round(rate, 4))} (relevance ≥ {number(digest.threshold)}, "
            f"{number(digest.scored)} pages scored)</p>")  # fmt: skip
    return _section("Focus: harvest", head + chart + hist)
