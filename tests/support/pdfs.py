"""Small PDFs written by hand for the PDF tests: text pages, a title, URI links, hostile ones."""

from __future__ import annotations

import zlib
from collections.abc import Sequence

__all__ = ["deflate_zeros", "make_pdf"]


def _literal(text: str) -> str:
    return "(" + text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") + ")"


def _stream(data: bytes, extra: str = "") -> bytes:
    return f"<< /Length {len(data)}{extra} >>\nstream\n".encode() + data + b"\nendstream"


def deflate_zeros(size: int, rounds: int = 1) -> bytes:
    """`size` zero bytes deflated `rounds` times (a decompression bomb's stream data)."""
    packer = zlib.compressobj(9)
    chunk = bytes(1 << 20)
    parts = [packer.compress(chunk) for _ in range(size >> 20)]
    data = b"".join([*parts, packer.compress(bytes(size & ((1 << 20) - 1))), packer.flush()])
    for _ in range(rounds - 1):
        data = zlib.compress(data, 9)
    return data


def make_pdf(
    pages: Sequence[str],
    *,
    title: str | None = None,
    links: Sequence[str] = (),
    encrypt: bool = False,
    kids_repeat: int = 1,
    count: int | None = None,
    content: bytes | None = None,
    catalog_extra: str = "",
) -> bytes:
    """A PDF with one text line a page (Helvetica), `title` in its Info dictionary, `links` as
    URI link annotations on its first page. Hostile variants: `encrypt` (a standard security
    handler whose user password is not empty), `kids_repeat` (the page list repeated, every
    entry the same pages), `count` (a /Count that lies), `content` (the first page's content
    stream, e.g. a FlateDecode bomb), `catalog_extra` (added to the catalog, e.g. nesting)."""
    objects: list[bytes] = []

    def add(body: bytes | str) -> int:
        objects.append(body.encode("latin-1") if isinstance(body, str) else body)
        return len(objects)

    catalog = add(b"")  # filled in below
    tree = add(b"")
    font = add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    annots = [
        add(f"<< /Type /Annot /Subtype /Link /Rect [72 {600 - 20 * i} 300 {615 - 20 * i}] "
            f"/Border [0 0 0] /A << /S /URI /URI {_literal(uri)} >> >>")
        for i, uri in enumerate(links)
    ]  # fmt: skip
    kids = []
    for n, text in enumerate(pages):
        if n == 0 and content is not None:
            stream = add(_stream(content, " /Filter /FlateDecode"))
        else:
            ops = f"BT /F1 12 Tf 72 720 Td {_literal(text)} Tj ET".encode("latin-1")
            stream = add(_stream(ops))
        annot = f" /Annots [{' '.join(f'{a} 0 R' for a in annots)}]" if n == 0 and annots else ""
        kids.append(add(f"<< /Type /Page /Parent {tree} 0 R /MediaBox [0 0 612 792] "
                        f"/Resources << /Font << /F1 {font} 0 R >> >> "
                        f"/Contents {stream} 0 R{annot} >>"))  # fmt: skip
    refs = " ".join([" ".join(f"{k} 0 R" for k in kids)] * kids_repeat)
    total = len(kids) * kids_repeat if count is None else count
    objects[tree - 1] = f"<< /Type /Pages /Kids [{refs}] /Count {total} >>".encode()
    objects[catalog - 1] = f"<< /Type /Catalog /Pages {tree} 0 R{catalog_extra} >>".encode()
    info = add(f"<< /Title {_literal(title)} >>") if title is not None else None
    encrypted = None
    if encrypt:  # /O and /U that the empty password does not open (RC4, revision 2)
        encrypted = add(
            f"<< /Filter /Standard /V 1 /R 2 /P -4 /O <{'ab' * 32}> /U <{'cd' * 32}> >>"
        )

    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{o:010d} 00000 n \n".encode() for o in offsets)
    trailer = f"/Size {len(objects) + 1} /Root {catalog} 0 R"
    trailer += f" /Info {info} 0 R" if info else ""
    trailer += f" /Encrypt {encrypted} 0 R /ID [<{'01' * 16}> <{'01' * 16}>]" if encrypted else ""
    out += f"trailer\n<< {trailer} >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)
