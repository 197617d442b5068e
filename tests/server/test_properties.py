"""Property test: whatever Java's Properties.store would write, parse_properties reads back."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from server.properties import parse_properties

_ESCAPES = {"\t": "\\t", "\n": "\\n", "\r": "\\r", "\f": "\\f"}


def java_escape(text: str, *, is_key: bool) -> str:
    """Escape like java.util.Properties.saveConvert (with escapeUnicode = true)."""
    out = []
    for index, char in enumerate(text):
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif char in "\\=:#!" or (char == " " and (is_key or index == 0)):
            out.append("\\" + char)
        elif " " <= char <= "~":
            out.append(char)
        else:
            units = char.encode("utf-16-be", "surrogatepass")
            for high in range(0, len(units), 2):
                out.append(f"\\u{int.from_bytes(units[high : high + 2], 'big'):04X}")
    return "".join(out)


keys = st.text(min_size=1, max_size=12)
values = st.text(max_size=30)
separators = st.sampled_from(["=", " = ", ":", ": ", " ", "\t", " \t:\t"])


@settings(max_examples=300)
@given(
    entries=st.dictionaries(keys, values, max_size=6),
    separator=separators,
    indent=st.sampled_from(["", "  ", "\t"]),
    newline=st.sampled_from(["\n", "\r\n", "\r"]),
    split_at=st.integers(min_value=0, max_value=40),
)
def test_store_then_load_round_trips(
    entries: dict[str, str], separator: str, indent: str, newline: str, split_at: int
) -> None:
    lines = ["#comment that looks like key=value", "! another", ""]
    for key, value in entries.items():
        escaped = java_escape(value, is_key=False)
        # A continuation line at a point that does not split an escape sequence.
        cut = split_at
        while 0 < cut < len(escaped) and escaped[cut - 1] == "\\":
            cut -= 1
        # (Leading whitespace of a continuation line is skipped, so never cut before a space.)
        if (
            0 < cut < len(escaped)
            and "\\" not in escaped[max(0, cut - 6) : cut]
            and escaped[cut] not in " \t\f"
        ):
            escaped = escaped[:cut] + "\\" + newline + "   " + escaped[cut:]
        lines.append(indent + java_escape(key, is_key=True) + separator + escaped)
    parsed = parse_properties(newline.join(lines))
    assert {prop.key: prop.value for prop in parsed} == entries
