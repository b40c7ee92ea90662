"""The HTML element names the tree builder treats alike (WHATWG 13.2.4.2, 13.2.6.4.7, 13.2.6.5),
shared by the estimate and the model of nesting."""

from __future__ import annotations

__all__ = [
    "BREAKOUT", "BUTTON_SCOPE", "CLOSES_P", "FORMATTING", "HEADINGS", "INTEGRATION_POINTS",
    "KEEP", "LIST_SCOPE", "RAW_TEXT", "SCOPE", "SCOPED_END", "SPECIAL", "TABLE_PARTS",
    "TABLE_SCOPE", "VOID",
]  # fmt: skip


def _names(text: str) -> frozenset[bytes]:
    return frozenset(text.encode().split())


HEADINGS = _names("h1 h2 h3 h4 h5 h6")
VOID = _names("area base basefont bgsound br col embed hr img image input keygen link meta")
VOID |= _names("param source track wbr")
RAW_TEXT = _names("script style textarea title xmp iframe noembed noframes")
# never escaped: what the crawler reads, raw text (escaping it would turn its text into markup),
# containers whose content must stay out of the document (template) or foreign (svg, math)
KEEP = _names("a area base link meta title script style textarea xmp iframe noembed noframes")
KEEP |= _names("noscript plaintext template svg math")
SPECIAL = (
    _names(
        "address applet area article aside base basefont bgsound blockquote body br button caption"
        " center col colgroup dd details dir div dl dt embed fieldset figcaption figure footer form"
        " frame frameset head header hgroup hr html iframe img input keygen li link listing main"
        " marquee menu meta nav noembed noframes noscript object ol p param plaintext pre script"
        " search section select source style summary table tbody td template textarea tfoot th"
        " thead title tr track ul wbr xmp mi mo mn ms mtext annotation-xml foreignobject desc"
    )
    | HEADINGS
)
SCOPE = _names("applet caption html table td th marquee object template")
SCOPE |= _names("mi mo mn ms mtext annotation-xml foreignobject desc title")
BUTTON_SCOPE = SCOPE | {b"button"}
LIST_SCOPE = SCOPE | {b"ol", b"ul"}
TABLE_SCOPE = _names("html table template")
CLOSES_P = (
    _names(
        "address article aside blockquote center details dialog dir div dl fieldset figcaption"
        " figure footer header hgroup main menu nav ol p search section summary ul pre listing form"
        " li dd dt plaintext hr xmp"
    )
    | HEADINGS
)
SCOPED_END = _names(
    "address article aside blockquote button center details dialog dir div dl fieldset"
    " figcaption figure footer header hgroup listing main menu nav ol pre search section"
    " summary ul dd dt applet marquee object"
)
TABLE_PARTS = _names("table tbody tfoot thead tr td th caption colgroup")
FORMATTING = _names("a b big code em font i nobr s small strike strong tt u")
BREAKOUT = (
    _names(
        "b big blockquote body br center code dd div dl dt em embed head hr i img li listing menu"
        " meta nobr ol p pre ruby s small span strong strike sub sup table tt u ul var"
    )
    | HEADINGS
)
INTEGRATION_POINTS = _names("foreignobject desc title mi mo mn ms mtext annotation-xml")
