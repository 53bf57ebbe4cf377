"""The one way scoi parses an XML document it is given: no DTD loaded, no entity, no network.

An internal DTD subset that declares anything (``<!DOCTYPE x [<!ENTITY ...>]>``) is refused
outright: it is where billion-laughs and external-entity attacks live, and no translation
format needs one. A DOCTYPE that only names a DTD (``<!DOCTYPE tmx SYSTEM "tmx14.dtd">``,
as many TMX and some XLIFF files carry) is accepted and never loaded. Entities are never
resolved, nothing is fetched, and libxml2's size limits hold (huge_tree off: a text node
of at most 10 MB, nesting of at most 256 levels). TMX ingest (ingest/read_tmx.py) streams
with the same settings and the same check.
"""

from __future__ import annotations

from typing import Any

from lxml import etree

from scoi.formats import DocumentError

#: The parser settings: no DTD, no entity resolution, no network, libxml2's limits.
SAFE = {"resolve_entities": False, "load_dtd": False, "dtd_validation": False, "no_network": True,
        "huge_tree": False}


def parser() -> etree.XMLParser:
    """A parser that loads no DTD, resolves no entity and reads nothing from the network."""
    return etree.XMLParser(**SAFE)


def doctype_problem(docinfo: Any) -> str | None:
    """Why a document's DOCTYPE is refused (None: it has none, or one that only names a DTD)."""
    dtd = docinfo.internalDTD
    if dtd is not None and (list(dtd.entities()) or list(dtd.elements())):
        return ("a DOCTYPE with an internal subset (<!DOCTYPE ... [<!ENTITY ...>]>) is not allowed: entity and "
                "DTD declarations are how XML entity attacks work; remove the [...] part")
    return None


def parse_xml(data: bytes, name: str, what: str) -> etree._ElementTree:
    """Parse ``data`` (the file ``name``, a ``what`` such as "XLIFF"): an internal DTD subset
    or any malformation is a DocumentError naming ``name:line``."""
    try:
        root = etree.fromstring(data, parser())
    except etree.XMLSyntaxError as e:
        raise DocumentError(f"{name}:{e.lineno or 1}: malformed {what}: {e.msg}") from None
    tree = root.getroottree()
    problem = doctype_problem(tree.docinfo)
    if problem:
        raise DocumentError(f"{name}:1: {problem}")
    for node in root.iter(etree.Entity):  # a reference left unresolved
        raise DocumentError(f"{name}:{node.sourceline or 1}: entity reference {node.text} in {what}; only the "
                            "predefined XML entities and character references are allowed")
    return tree


__all__ = ["SAFE", "doctype_problem", "parse_xml", "parser"]
