"""The built-in topic scorer of focused crawls (``crawl --focus "words"``).

:class:`TopicScorer` rates a fetched page's relevance and a new link's priority; the model is
described in :mod:`crawler.focus.relevance.scorer`, the text handling in
:mod:`crawler.focus.relevance.text`.
"""

from __future__ import annotations

from crawler.focus.relevance.scorer import DEFAULT_THRESHOLD, TopicScorer

__all__ = ["DEFAULT_THRESHOLD", "TopicScorer"]
