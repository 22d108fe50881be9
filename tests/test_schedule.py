"""tests/schedule.py: the workers of ``bash run.sh test`` take whole test files, the listed ones longest first."""

from __future__ import annotations

import pytest

from tests import schedule


def test_files_move_whole_listed_longest_first_then_most_tests_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(schedule, "FILE_SECONDS", {"test_slow.py": 50.0, "test_slower.py": 90.0})
    nodeids = [
        "tests/test_a.py::one",
        "tests/test_slow.py::x",
        "tests/test_b.py::one",
        "tests/test_b.py::two",
        "tests/test_slower.py::y[1]",
        "tests/test_slow.py::z",
        "tests/test_slower.py::y[2]",
        "tests/test_c.py::one",
    ]
    order = [nodeids[i] for i in schedule.longest_first(nodeids)]
    assert order == [
        "tests/test_slower.py::y[1]",
        "tests/test_slower.py::y[2]",
        "tests/test_slow.py::x",
        "tests/test_slow.py::z",
        "tests/test_b.py::one",  # not listed: most tests first
        "tests/test_b.py::two",
        "tests/test_a.py::one",  # equals keep the collection's order
        "tests/test_c.py::one",
    ]


def test_every_listed_file_exists() -> None:
    """A file renamed or removed leaves its entry behind, and its replacement would run in the wrong place."""
    from tests.conftest import ROOT

    missing = [name for name in schedule.FILE_SECONDS if not (ROOT / "tests" / name).is_file()]
    assert not missing, missing
