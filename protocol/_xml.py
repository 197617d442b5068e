"""Writing XML exactly like XStream's PrettyPrintWriter (quirks mode), as the official server does.

A small immutable node model (`Node`) covers the rarely sent packets; the hot ones (memento,
move) build strings directly from precomputed pieces.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from typing import TypeAlias

# (tag, attributes in order, children or text or None). Tuples only, so events holding a
# node stay hashable.
Attrs: TypeAlias = tuple[tuple[str, str], ...]
Node: TypeAlias = tuple[str, Attrs, "tuple[Node, ...] | str | None"]

INDENT = "  "

# Characters PrettyPrintWriter never writes verbatim. LF and TAB are raw in text but
# escaped in attribute values; CR is always escaped.
_SPECIAL_ASCII = re.compile(r"[&<>\"'\x00-\x1f\x7f-\x9f]")
_SPECIAL_ASCII_TEXT = re.compile(r"[&<>\"'\x00-\x08\x0b-\x1f\x7f-\x9f]")
_NAMED = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&apos;", "\r": "&#xd;"}


def _char_ref(char: str) -> str:
    return f"&#x{ord(char):x};"


def _needs_char_ref(char: str) -> bool:
    code = ord(char)
    if code < 0x20 or 0x7F <= code <= 0x9F:
        return True
    # Java's Character.isDefined is false for unassigned BMP code points (e.g. U+FFFE):
    # XStream writes those as character references. Astral characters travel as
    # surrogate pairs there, each of which is "defined", so they stay raw.
    return code <= 0xFFFF and not (0xD800 <= code <= 0xDFFF) and unicodedata.category(char) == "Cn"


def _escape(value: str, in_attribute: bool) -> str:
    out: list[str] = []
    for char in value:
        named = _NAMED.get(char)
        if named is not None:
            out.append(named)
        elif char in "\n\t" and not in_attribute:
            out.append(char)
        elif _needs_char_ref(char):
            out.append(_char_ref(char))
        elif 0xD800 <= ord(char) <= 0xDFFF:
            # A lone surrogate cannot be encoded; Java's encoder writes '?'.
            out.append("?")
        else:
            out.append(char)
    return "".join(out)


@functools.lru_cache(maxsize=4096)
def escape_attr(value: str) -> str:
    """An attribute value as PrettyPrintWriter writes it (without the quotes)."""
    if value.isascii() and _SPECIAL_ASCII.search(value) is None:
        return value
    return _escape(value, in_attribute=True)


def escape_text(value: str) -> str:
    """Element text as PrettyPrintWriter writes it."""
    if value.isascii() and _SPECIAL_ASCII_TEXT.search(value) is None:
        return value
    return _escape(value, in_attribute=False)


def attrs_to_str(attrs: Attrs) -> str:
    return "".join(f' {name}="{escape_attr(value)}"' for name, value in attrs)


def render(node: Node, depth: int = 0) -> str:
    """The node at nesting `depth` (two spaces per level). The first line carries no
    indentation (the caller places it); nested lines are indented absolutely."""
    tag, attrs, content = node
    head = f"<{tag}{attrs_to_str(attrs)}"
    if content is None:
        return head + "/>"
    if isinstance(content, str):
        return f"{head}>{escape_text(content)}</{tag}>"
    if not content:
        # An empty child tuple asks for an explicit end tag: socha frames <errorpacket>
        # only up to "</errorpacket>", so that one must never be self-closing.
        return f"{head}></{tag}>"
    inner = "\n" + INDENT * (depth + 1)
    body = inner.join(render(child, depth + 1) for child in content)
    return f"{head}>{inner}{body}\n{INDENT * depth}</{tag}>"


def render_standalone(node: Node, indent: int) -> str:
    return INDENT * indent + render(node, indent)
