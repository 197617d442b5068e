"""`bench.viewer --server-cpu` takes a CPU number or "none" and says which it did not get."""

from __future__ import annotations

import argparse

import pytest

from bench.viewer import cpu_or_none


def test_a_cpu_number_or_none() -> None:
    assert cpu_or_none("1") == 1
    assert cpu_or_none("none") is None
    with pytest.raises(argparse.ArgumentTypeError, match="not a CPU number or 'none': 'one'"):
        cpu_or_none("one")
