"""A crawl's rendering of its pages (``[render]``, ``--render``): `Rendering`.

A page is rendered after its document was fetched as every page is (robots.txt, politeness and
the frontier's scheduling unchanged), when it is an HTML 2xx and `Rendering.wants` it: its host's
``[[hosts]] render`` says so, else ``[render] enabled`` with ``mode`` "always", or "auto" and a
static HTML that looks script-driven (`crawler.render.auto`). The browser is given the response
already fetched and the crawl's fetcher for everything else (`crawler.render`); its DOM is parsed
as any page is and merged with the static markup (`crawler.render.dom.merged`). A page that does
not render (a timeout, a crash) keeps its static markup: the crawl goes on.

`crawler.render` is imported only by a crawl that may render (`Rendering.build` returns a
`Rendering`): a crawl without rendering does not pay for importing it at start-up.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from crawler.config.load import Config
from crawler.fetch.fetcher import Fetcher
from crawler.fetch.response import Response
from crawler.parse.markup import Markup
from crawler.parse.thread import Parser

if TYPE_CHECKING:
    from crawler.render.pool import Renderer

__all__ = ["Rendering"]

log = logging.getLogger(__name__)

RENDERED_TYPE = "text/html; charset=utf-8"  # the serialized DOM, whatever the page's charset


class Rendering:
    """Which pages of a crawl are rendered, and their markup once rendered."""

    __slots__ = ("_config", "_fetcher", "_parser", "auto_checked", "auto_rendered", "renderer")

    def __init__(
        self, config: Config, fetcher: Fetcher, parser: Parser, renderer: Renderer
    ) -> None:
        self._config = config
        self._fetcher = fetcher
        self._parser = parser
        self.renderer = renderer
        self.auto_checked = 0  # pages auto mode looked at
        self.auto_rendered = 0  # of them, those it rendered

    @classmethod
    def build(
        cls,
        config: Config,
        fetcher: Fetcher,
        parser: Parser,
        recorder: Callable[[Response], None] | None = None,
    ) -> Rendering | None:
        """The crawl's rendering, None when no page may be rendered ([render] off and no
        ``[[hosts]] render = true``); `RenderUnavailable` (a ConfigError) when playwright or
        Chromium is missing."""
        r = config.render
        if not r.enabled and not any(rule.render for rule in config.hosts):
            return None
        from crawler.render.network import Subresources, credentials_of  # (the docstring)
        from crawler.render.pool import Renderer

        politeness = config.politeness.per_host_concurrency

        def per_host(key: str) -> int:
            rule = fetcher.rules.host_rule(key)
            limit = rule.per_host_concurrency if rule is not None else None
            return limit or politeness

        network = Subresources(fetcher.fetch, per_host=per_host,
                               max_redirects=config.fetch.max_redirects, recorder=recorder,
                               credentialed=credentials_of(fetcher.rules))  # fmt: skip
        options = r.page_options(config.crawl.user_agent, max_html=config.fetch.max_body)
        renderer = Renderer(network, options, r.browser_settings())
        return cls(config, fetcher, parser, renderer)

    def wants(self, url: str, body: bytes, markup: Markup) -> bool:
        """Whether the page at `url` (its static `body`, parsed as `markup`) is rendered."""
        if not markup.is_html:
            return False
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
        hosts = self._config.hosts  # the [[hosts]] rule matching the page's host, if any
        i = self._fetcher.rules.find(parts.hostname or "", port, parts.scheme) if hosts else None
        if i is not None and hosts[i].render is not None:
            return bool(hosts[i].render)
        r = self._config.render
        if not r.enabled:
            return False
        if r.mode == "always":
            return True
        from crawler.render.auto import script_driven  # (see the module's docstring)

        self.auto_checked += 1
        why = script_driven(body, markup)
        if why is not None:
            self.auto_rendered += 1
            log.debug("render: %s looks script-driven (%s)", url, why)
        return why is not None

    async def read(
        self, url: str, response: Response, static: Markup, **parse: Any
    ) -> tuple[Markup, bool]:
        """The page's markup rendered and merged with `static`, and True; `static` and False
        when it could not be rendered. `parse`: what `Parser.parse` reads (``anchors``,
        ``text``, ``content``...), as the static HTML was parsed."""
        from crawler.render.browser import RenderError  # (see the module's docstring)
        from crawler.render.dom import merged

        try:
            rendered = await self.renderer.render(url, response)
        except RenderError as exc:
            log.info("render: %s: %s (its static HTML is read)", url, exc)
            return static, False
        markup = await self._parser.parse(rendered.html, url, RENDERED_TYPE, **parse)
        if not markup.is_html:
            return static, False
        extra = [*rendered.shadow_links, *((target, False) for target in rendered.navigations)]
        return merged(static, markup, extra), True

    def stats(self) -> dict[str, int]:
        figures = self.renderer.stats()
        if self._config.render.mode == "auto":
            figures.update(auto_checked=self.auto_checked, auto_rendered=self.auto_rendered)
        return figures

    async def close(self) -> None:
        await self.renderer.close()

    def __repr__(self) -> str:
        return f"<Rendering mode={self._config.render.mode} {self.renderer!r}>"
