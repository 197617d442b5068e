"""`--no-skips`: a run in which a skip is a failure. .ci/run passes it to the groups it runs
with their services installed (slow, browser, distributed, Docker): there a test that skips
for a missing dependency (no chromium, no docker-compose, no PostgreSQL) would pass CI
silently. Expected failures (`xfail`) stay what they are; deselection (`-m`) is no skip."""

from __future__ import annotations

from collections.abc import Generator

import pytest

NO_SKIPS = "--no-skips"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        NO_SKIPS,
        action="store_true",
        help="fail every test (and test module) that skips: for CI's groups with services",
    )


def _turn_skip_into_failure(report: pytest.TestReport | pytest.CollectReport) -> None:
    if not report.skipped or hasattr(report, "wasxfail"):
        return
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    report.outcome = "failed"
    report.longrepr = f"skipped in a run that must not skip ({NO_SKIPS}): {reason}"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if item.config.getoption(NO_SKIPS):
        _turn_skip_into_failure(report)
    return report


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    report = yield
    if collector.config.getoption(NO_SKIPS):  # a module-level skip or importorskip
        _turn_skip_into_failure(report)
    return report
