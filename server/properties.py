"""The Java properties format (`java.util.Properties.load`), as `server.properties` uses it.

Parsed by hand rather than with `javaproperties`: the messages about a bad value name the file
and the line of its key, and `javaproperties` does not report lines.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class Property:
    """One key and its value, with the line where it starts (for error messages)."""

    key: str
    value: str
    line: int  # 1-based line where the logical line starts


def parse_properties(text: str) -> list[Property]:
    """Parse the Java properties format: `key=value`, `key: value`, `key value`, comments
    starting with # or !, continuation lines ending in an odd number of backslashes,
    backslash escapes including \\uXXXX. Raises ValueError (with the line) on a bad \\u escape."""
    result = []
    for line_no, logical in _logical_lines(text):
        key, value = _split_key_value(logical)
        try:
            result.append(Property(_unescape(key), _unescape(value), line_no))
        except ValueError as error:
            raise ValueError(f"line {line_no}: {error}") from None
    return result


_WHITESPACE = " \t\f"


def _logical_lines(text: str) -> Iterator[tuple[int, str]]:
    natural = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    index = 0
    while index < len(natural):
        start = index
        line = natural[index].lstrip(_WHITESPACE)
        index += 1
        if not line or line[0] in "#!":
            continue  # comments are never continued
        parts = []
        while _ends_with_continuation(line):
            parts.append(line[:-1])
            if index >= len(natural):
                line = ""
                break
            line = natural[index].lstrip(_WHITESPACE)
            index += 1
        parts.append(line)
        yield start + 1, "".join(parts)


def _ends_with_continuation(line: str) -> bool:
    backslashes = len(line) - len(line.rstrip("\\"))
    return backslashes % 2 == 1


def _split_key_value(line: str) -> tuple[str, str]:
    position = 0
    while position < len(line):
        char = line[position]
        if char == "\\":
            position += 2
            continue
        if char in "=:" or char in _WHITESPACE:
            break
        position += 1
    key = line[:position]
    rest = line[position:].lstrip(_WHITESPACE)
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(_WHITESPACE)
    return key, rest


_SIMPLE_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(raw: str) -> str:
    if "\\" not in raw:
        return raw
    out = []
    position = 0
    while position < len(raw):
        char = raw[position]
        if char != "\\":
            out.append(char)
            position += 1
            continue
        if position + 1 >= len(raw):
            break  # a lone trailing backslash (end of file) is dropped, as in Java
        escaped = raw[position + 1]
        if escaped == "u":
            digits = raw[position + 2 : position + 6]
            if len(digits) != 4 or any(c not in "0123456789abcdefABCDEF" for c in digits):
                raise ValueError(f"malformed \\uXXXX escape: {raw[position : position + 6]!r}")
            out.append(chr(int(digits, 16)))
            position += 6
        else:
            out.append(_SIMPLE_ESCAPES.get(escaped, escaped))
            position += 2
    text = "".join(out)
    # Java strings are UTF-16: a character beyond U+FFFF is written as two \u escapes (a
    # surrogate pair), which must become one character here.
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
