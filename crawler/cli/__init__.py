"""The `crawl` command: its arguments, a run with its outputs, progress and the summary.

| module | holds |
| --- | --- |
| `args` | The `crawl` command's arguments: `build_parser`, and what they override in ... |
| `command` | The `crawl` console script: `entry` imports the command (`crawler.cli.main`) ... |
| `main` | The `crawl` command |
| `progress` | Watching a crawl: live progress and the final summary, on stderr (stdout may ... |
| `report` | `crawl report OUT.jsonl [--stats FILE] -o FILE`: the HTML report of an existing ... |
| `run` | One run of the `crawl` command: `run` (a crawl with its outputs) and `run_demo` |
| `seeds` | Seeds for the `crawl` command: read from the command line and seeds files, ... |
| `settings` | `crawl -s SECTION.KEY=VALUE`: any config key from the command line (Scrapy's ... |
| `watching` | A run's watchers from outside (`crawler.observe`): ``--metrics`` served while ... |

Nothing is imported here: `crawl` loads `crawler.cli.command` first, and its Ctrl-C
handler must be in place before anything else loads.
"""

from __future__ import annotations

__all__: list[str] = []
