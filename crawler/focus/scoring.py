"""What a focused crawl scores: a `Link` found on a page, and the `PageText` of a fetched page.

Best-first crawling orders each host's queue by a priority (higher first; ties first in, first
out). A priority comes from a *score function* given to the crawler, ``Crawler(config, score=fn)``,
which sees one immutable :class:`Link` per new URL and returns its priority, or None to skip it;
it may be a coroutine function. ``crawl --focus "words"`` uses the built-in topic scorer
(:class:`Scorer` is the shape it has), which also rates each fetched page's relevance from its
:class:`PageText`.
"""

from __future__ import annotations

import asyncio
import inspect
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol, cast, runtime_checkable

from crawler.errors import ScoreError

__all__ = ["FollowsRedirects", "Link", "PageText", "Rescorer", "ScoreFn", "Scorer", "score_links"]


@dataclass(frozen=True, slots=True)
class Link:
    """One new link, as a score function sees it."""

    url: str  # the URL that will be fetched
    key: str  # its canonical form (the dedup key)
    anchor: str  # the link's text (whitespace collapsed; an image's alt text), "" if none
    rel: str  # its rel attribute, "" if none
    context: str  # text around the link (its enclosing block, whitespace collapsed), "" if none
    depth: int  # the depth the link would be fetched at (its page's depth + 1)
    parent_url: str  # the page it was found on
    parent_title: str | None  # that page's title
    parent_relevance: float | None  # that page's relevance (None without a page scorer)


@dataclass(frozen=True, slots=True)
class PageText:
    """The text of one fetched HTML page, for rating its relevance."""

    url: str
    title: str  # "" if none
    headings: str  # the text of h1-h6, whitespace collapsed
    body: str  # the visible text (scripts, styles and navigation left out), capped in length


ScoreFn = Callable[[Link], "float | Awaitable[float | None] | None"]


class Scorer(Protocol):
    """A topic scorer: a page's relevance and a link's priority (both higher = better)."""

    threshold: float  # pages at or above it count as relevant (the harvest rate's numerator)

    def page(self, text: PageText) -> float:
        """The relevance of a fetched page; may learn from it (e.g. term statistics)."""
        ...

    def link(self, link: Link) -> float:
        """The priority of a new link."""
        ...


@runtime_checkable
class Rescorer(Protocol):
    """A scorer that can score queued links again as it learns (the built-in topic scorer)."""

    def rescore(self, size: int) -> list[tuple[str, str, float]]:
        """(url, key, priority now) of up to `size` URLs it scored links to, round robin."""
        ...

    def forget(self, url: str) -> None:
        """Stop rescoring a URL (it is no longer queued)."""
        ...


@runtime_checkable
class FollowsRedirects(Protocol):
    """A scorer that learns from the pages behind the links it scored (the built-in one)."""

    def moved(self, url: str, target: str) -> None:
        """The URL a link was scored for redirected to `target`: learn from `target`'s page
        as from the page behind that link."""
        ...


async def score_links(score: ScoreFn, links: list[Link]) -> list[float | None]:
    """The priority `score` gives each link (None = skip). A coroutine function's calls for
    one page run concurrently; the first failure (in link order), or a value that is neither a
    finite number nor None, raises `ScoreError` naming the link."""
    values: list[object] = []
    waiting: list[int] = []  # indices of awaitable values
    for i, link in enumerate(links):
        try:
            value: object = score(link)
        except Exception as exc:
            raise _failed(link, exc) from exc
        if inspect.isawaitable(value):
            waiting.append(i)
        values.append(value)
    if waiting:
        done = await asyncio.gather(
            *(cast("Awaitable[object]", values[i]) for i in waiting), return_exceptions=True
        )
        for i, value in zip(waiting, done, strict=True):
            if isinstance(value, BaseException):
                if not isinstance(value, Exception):
                    raise value  # cancellation and the like go through
                raise _failed(links[i], value) from value
            values[i] = value
    return [_priority(link, value) for link, value in zip(links, values, strict=True)]


def _priority(link: Link, value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    raise ScoreError(
        f"the score function returned {value!r} for link {link.url} (found on "
        f"{link.parent_url}): expected a finite number, or None to skip the link"
    )


def _failed(link: Link, exc: Exception) -> ScoreError:
    return ScoreError(
        f"the score function raised {type(exc).__name__}: {exc} for link {link.url} (found on "
        f"{link.parent_url})"
    )
