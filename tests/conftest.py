"""Test rules (loopback, port 0, MockClock, time limits) and helpers: see tests/README.md."""
