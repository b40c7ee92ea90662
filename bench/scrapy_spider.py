"""The Scrapy peer of the end-to-end crawl benchmark (run by bench.bench_crawl).

    python -m scrapy runspider bench/scrapy_spider.py -a start_url=http://127.0.0.1:PORT/index.html

Settings equivalent to the crawler's benchmark config: 32 concurrent requests (also per domain),
no delay, robots.txt ignored, no depth limit, no HTTP cache, no cookies, 2 retries, no telnet or
remote-control servers, the start URL's host as the only allowed domain, LinkExtractor (a/area
hrefs) on every HTML response, one small item per page. On close it prints one JSON line to
stdout (the log goes to stderr): responses downloaded, distinct URLs, and wall/CPU seconds from
spider open to close; with ``-a urls_out=FILE`` it also writes every downloaded URL, one a line.
"""

from __future__ import annotations

import json
import resource
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import scrapy
from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.http import HtmlResponse, Request, Response
from scrapy.linkextractors import LinkExtractor


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class DocsSpider(scrapy.Spider):
    name = "bench_docs"
    custom_settings = {  # noqa: RUF012 (Scrapy's API)
        "CONCURRENT_REQUESTS": 32,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 32,
        "CONCURRENT_REQUESTS_PER_IP": 0,
        "DOWNLOAD_DELAY": 0,
        "AUTOTHROTTLE_ENABLED": False,
        "ROBOTSTXT_OBEY": False,
        "DEPTH_LIMIT": 0,
        "HTTPCACHE_ENABLED": False,
        "COOKIES_ENABLED": False,
        "TELNETCONSOLE_ENABLED": False,
        "REMOTE_CONTROL_ENABLED": False,
        "RETRY_TIMES": 2,
        "DOWNLOAD_MAXSIZE": 10 * 1024 * 1024,
        "LOG_LEVEL": "WARNING",
    }

    def __init__(self, start_url: str, urls_out: str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        parts = urlsplit(start_url)
        self.start_urls = [start_url]
        self.allowed_domains = [parts.hostname or ""]
        # LinkExtractor matches domains against the netloc, port included
        self.extractor = LinkExtractor(allow_domains=[parts.netloc])
        self.urls_out = urls_out
        self.downloaded: list[str] = []
        self.started = self.cpu0 = 0.0

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> DocsSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        crawler.signals.connect(spider.on_opened, signal=signals.spider_opened)
        crawler.signals.connect(spider.on_downloaded, signal=signals.response_downloaded)
        crawler.signals.connect(spider.on_closed, signal=signals.spider_closed)
        assert isinstance(spider, DocsSpider)
        return spider

    def on_opened(self, spider: scrapy.Spider) -> None:
        self.started, self.cpu0 = time.perf_counter(), _cpu()

    def on_downloaded(self, response: Response, request: Request, spider: scrapy.Spider) -> None:
        self.downloaded.append(response.url)  # every response, redirects and errors included

    def on_closed(self, spider: scrapy.Spider, reason: str) -> None:
        wall, cpu = time.perf_counter() - self.started, _cpu() - self.cpu0
        assert self.crawler.stats is not None
        stats = self.crawler.stats.get_stats()
        statuses: dict[str, int] = {}
        for key, value in stats.items():
            if key.startswith("downloader/response_status_count/"):
                cls = key.rsplit("/", 1)[1][0] + "xx"
                statuses[cls] = statuses.get(cls, 0) + int(value)
        out = {
            "pages": len(self.downloaded),
            "distinct": len({u.split("#", 1)[0] for u in self.downloaded}),
            "wall_s": wall,
            "cpu_s": cpu,
            "statuses": dict(sorted(statuses.items())),
            "items": stats.get("item_scraped_count", 0),
            "reason": reason,
        }
        if self.urls_out:
            with open(self.urls_out, "w") as fh:
                fh.writelines(u + "\n" for u in self.downloaded)
        print(json.dumps(out), flush=True)

    def parse(self, response: Response, **kwargs: Any) -> Iterator[Request | dict[str, Any]]:
        links = self.extractor.extract_links(response) if isinstance(response, HtmlResponse) else []
        for link in links:
            yield Request(link.url, callback=self.parse)
        yield {"url": response.url, "status": response.status, "links": len(links)}
