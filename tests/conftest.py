"""Shared by every test folder: the repository's root, and the helper modules beside this file
(``problems``, ``_exact``, ``_ulps``, ...), importable by name (``pythonpath`` in pyproject)."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def root() -> Path:
    """The repository's root."""
    return ROOT
