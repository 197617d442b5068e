"""One run of a bench script under callgrind with another checkout's code: the instruction
count for the callgrind benches (`bench.server_instructions`, `bench.move_path_instructions`,
`bench.connection_instructions`)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

_COLLECTED = re.compile(rb"Collected : (\d+)")


def reported(output: str, name: str) -> int:
    """The number the inner run printed as `name N` (SystemExit when it printed none)."""
    found = re.search(rf"{re.escape(name)} (\d+)", output)
    if found is None:
        raise SystemExit(f"no {name!r} count in the output: {output[-500:]!r}")
    return int(found[1])


def count_in_checkout(
    script: str, arguments: list[str], root: Path, *, hash_seed: str | None = "0"
) -> tuple[int, str]:
    """(instructions, stdout) of `script` run with `arguments` under callgrind.

    The script runs by path from an empty directory, so `bench`, `server` ... come from
    PYTHONPATH (`root`), not from this checkout nor from the script's own directory.
    `hash_seed` fixes PYTHONHASHSEED (None: the environment's). Raises SystemExit when
    callgrind reports no count."""
    run = (
        f"import runpy, sys; sys.argv = {[script, *arguments]!r}; "
        f"runpy.run_path({str(Path(script).resolve())!r}, run_name='__main__')"
    )
    command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"]
    command += [sys.executable, "-c", run]
    environment = dict(os.environ, PYTHONPATH=str(root))
    if hash_seed is not None:
        environment["PYTHONHASHSEED"] = hash_seed
    with tempfile.TemporaryDirectory() as empty:
        done = subprocess.run(command, cwd=empty, env=environment, capture_output=True, check=True)
    return collected(done.stderr), done.stdout.decode()


def collected(report: bytes) -> int:
    """The instruction count in callgrind's report (SystemExit when it holds none)."""
    found = _COLLECTED.search(report)
    if found is None:
        raise SystemExit(f"no count in the output: {report[-500:]!r}")
    return int(found[1])
