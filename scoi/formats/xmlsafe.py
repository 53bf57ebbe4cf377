"""The one way scoi parses an XML document it is given: no DTD, no entity, no network.

A file with a DOCTYPE is refused outright (an internal subset is where billion-laughs and
external-entity attacks live, and no CAT format needs one); entities are never resolved,
nothing is fetched, and libxml2's size limits hold (huge_tree off: a text node of at most
10 MB, nesting of at most 256 levels).
"""

from __future__ import annotations

from lxml import etree

from scoi.formats import DocumentError


def parser() -> etree.XMLParser:
    """A parser that loads no DTD, resolves no entity and reads nothing from the network."""
    return etree.XMLParser(resolve_entities=False, load_dtd=False, dtd_validation=False, no_network=True,
                           huge_tree=False, remove_comments=False, remove_pis=False)


def parse_xml(data: bytes, name: str, what: str) -> etree._ElementTree:
    """Parse ``data`` (the file ``name``, a ``what`` such as "XLIFF"): a DOCTYPE or any
    malformation is a DocumentError naming ``name:line``."""
    head = data[:4096].lstrip(b"\xef\xbb\xbf")
    try:
        root = etree.fromstring(data, parser())
    except etree.XMLSyntaxError as e:
        raise DocumentError(f"{name}:{e.lineno or 1}: malformed {what}: {e.msg}") from None
    tree = root.getroottree()
    if tree.docinfo.doctype or tree.docinfo.internalDTD is not None or b"<!DOCTYPE" in head:
        raise DocumentError(f"{name}:1: a DOCTYPE is not allowed in {what} (DTDs and entity declarations are "
                            "refused: they are how XML entity attacks work); remove it")
    for node in root.iter(etree.Entity):  # unresolved references to declared entities
        raise DocumentError(f"{name}:{node.sourceline or 1}: entity reference {node.text} in {what}; only the "
                            "predefined XML entities and character references are allowed")
    return tree


__all__ = ["parse_xml", "parser"]
