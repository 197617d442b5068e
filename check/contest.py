"""The contest's rules of submission and its limits that the check relies on
(docs/check.md, "The contest as the check assumes it"). One place, so a new season changes
them here."""

from __future__ import annotations

CONTEST_HOST = "gameserver"
CONTEST_PORT = 13050
MOVE_SECONDS = 2.0  # from the server's message to the bot's answer
MEMORY_MIB = 1536
CPU_THREADS = 1
# Python images of the contest and the setuptools each one has.
PYTHON_VERSIONS = ("3.10", "3.12")
WHEEL_PLATFORM = "manylinux2014_x86_64"
# Tags a wheel may carry to install on that platform: manylinux2014 is manylinux_2_17, and
# the older manylinux tags install there too.
COMPATIBLE_PLATFORMS = frozenset(
    {
        "any",
        "linux_x86_64",  # a local build: it may or may not run there (WARN)
        "manylinux1_x86_64",
        "manylinux2010_x86_64",
        "manylinux2014_x86_64",
        *(f"manylinux_2_{minor}_x86_64" for minor in range(5, 18)),
    }
)


def contest_arguments(style: str, host: str, port: int, reservation: str) -> list[str]:
    """The contest's start arguments in one of the forms GNU getopt accepts (the contest says
    `-h gameserver -p 13050 -r CODE`, long forms and any order allowed)."""
    if style == "short":
        return ["-h", host, "-p", str(port), "-r", reservation]
    if style == "long":
        return ["--host", host, "--port", str(port), "--reservation", reservation]
    if style == "reordered":
        return ["-r", reservation, "--port", str(port), "-h", host]
    if style == "equals":
        return [f"--reservation={reservation}", f"--host={host}", f"--port={port}"]
    if style == "join":  # no reservation: the bot must join any open game
        return ["-h", host, "-p", str(port)]
    raise ValueError(f"unknown argument style {style!r}")


ARGUMENT_STYLES = ("short", "long", "reordered", "equals")
