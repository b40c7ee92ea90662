"""What enters the frontier: the scope, the seen test's gate, and the links a limit kept.

| module | holds |
| --- | --- |
| `gate` | What enters the frontier: the per-link path and its bookkeeping |
| `kept` | Offering the links a limit refused again, when a resumed crawl's limits grew |
| `scope` | Which canonical URLs a crawl follows, and the crawler-trap guards |
| `shared` | The admission gate of a crawl shared through Redis: `SharedAdmission`, the ... |
| `store` | Where a focused crawl's admission asks and takes: the store behind the one scoring ... |

What other folders use is exported here, imported when first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from crawler._exports import lazy

if TYPE_CHECKING:
    from crawler.admission.gate import Admission
    from crawler.admission.kept import notes, offer_kept
    from crawler.admission.scope import Scope
    from crawler.admission.shared import SharedAdmission

__all__ = [
    "Admission",
    "Scope",
    "SharedAdmission",
    "notes",
    "offer_kept",
]

__getattr__ = lazy(
    __name__,
    {
        "Admission": "gate",
        "Scope": "scope",
        "SharedAdmission": "shared",
        "notes": "kept",
        "offer_kept": "kept",
    },
)
