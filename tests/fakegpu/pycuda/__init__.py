"""A pretend PyCUDA for the CPU tests (see tests/fakegpu/README.md)."""

VERSION_TEXT = "fake"
