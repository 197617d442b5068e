"""Our names as the official Python client socha 4.3.9 spells them (CamelCase)."""

from __future__ import annotations

from engine import Direction, FieldState

# ONE_S → OneS, SQUID → Squid.
SOCHA_FIELD_NAMES = {field: field.name.title().replace("_", "") for field in FieldState}


def socha_direction_name(direction: Direction) -> str:
    """UP_RIGHT → UpRight."""
    return "".join(part.capitalize() for part in direction.name.split("_"))
