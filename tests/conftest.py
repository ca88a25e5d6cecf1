"""Test configuration: the tests directory has no __init__.py, so put it on sys.path for
`import _helpers`; register the `gpu` marker (also declared in pyproject.toml)."""
from __future__ import annotations

import os
import sys

_TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
if _TESTS_DIR not in sys.path:
    sys.path.insert(0, _TESTS_DIR)


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA device (skipped without one)")
