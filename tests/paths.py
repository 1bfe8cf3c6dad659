"""Folders the tests read files from: the repository's root and the tests' own."""

from pathlib import Path

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
