"""Command-line entry points: the composition roots (nothing imports them as a library)."""
