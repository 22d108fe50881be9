"""The published JSON Schema of the native format agrees with the ingest validator on the fixtures."""

from __future__ import annotations

import json

import jsonschema
import pytest

from store import PROJECT_ROOT
from tests.conftest import FIXTURES

SCHEMA = json.loads((PROJECT_ROOT / "data" / "schema" / "native-v1.schema.json").read_text())


def records(name: str) -> list[dict]:
    return [json.loads(line) for line in (FIXTURES / name).read_text().splitlines() if line.strip()]


@pytest.mark.parametrize("name", ["good.jsonl", "graded.jsonl"])
def test_good_fixtures_are_valid(name: str) -> None:
    for rec in records(name):
        jsonschema.validate(rec, SCHEMA)


@pytest.mark.parametrize(
    ("name", "line"),
    [
        ("wrong_type.jsonl", 4),
        ("missing_field.jsonl", 4),
        ("missing_field.jsonl", 5),
        ("score_out_of_range.jsonl", 4),
    ],
)
def test_bad_lines_are_invalid(name: str, line: int) -> None:
    rec = records(name)[line - 1]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(rec, SCHEMA)
