"""Fuzzing (slow): mutated native logs and adapter inputs (hypothesis, derandomized, bounded examples).

Every registered format gets valid inputs mutated structurally (a value anywhere in the JSON tree replaced by
arbitrary JSON, deleted or duplicated; a CSV cell replaced by arbitrary text) and at the byte level (truncation,
inserted bytes). The only failure allowed is the project's own ``IngestError`` whose every problem names a
location in the file; after a rejected file the database is exactly as before.
"""

from __future__ import annotations

import copy
import itertools
import json
from pathlib import Path
from typing import Any

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingest.errors import IngestError
from ingest.pipeline import ingest_file
from store import migrate
from tests.conftest import FIXTURES, SHARED_DATA

pytestmark = pytest.mark.slow

TABLES = (
    "benchmarks",
    "tasks",
    "runs",
    "attempts",
    "steps",
    "texts",
    "error_labels",
    "attempt_metrics",
    "ratings",
    "ingest_log",
)
FUZZ = settings(
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=60,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
tree_edits = st.tuples(
    st.lists(st.integers(min_value=0, max_value=10_000), max_size=8),
    st.sampled_from(["replace", "delete", "duplicate"]),
    json_values,
)
byte_edits = st.one_of(
    st.none(), st.tuples(st.sampled_from(["truncate", "insert"]), st.floats(0, 1), st.binary(min_size=1, max_size=8))
)


class Sandbox:
    """One in-memory database (holding the good fixture) shared by the examples of a test."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.con = duckdb.connect(":memory:")
        migrate(self.con)
        ingest_file(self.con, FIXTURES / "good.jsonl")
        self.serial = itertools.count()

    def counts(self) -> dict[str, int]:
        return {t: int(self.con.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0]) for t in TABLES}

    def check(self, name: str, data: bytes, fmt: str) -> None:
        """Ingest ``data``; succeed, or fail with located IngestError problems and no change to the DB."""
        path = self.folder / f"{next(self.serial):05d}" / name
        path.parent.mkdir()
        path.write_bytes(data)
        before = self.counts()
        try:
            ingest_file(self.con, path, fmt=fmt)
        except IngestError as exc:
            assert exc.problems
            for problem in exc.problems:
                assert problem.location.startswith((str(path), "--")), problem
                assert problem.reason, problem
            assert self.counts() == before
        self.con.execute("SELECT 1").fetchall()  # no transaction left open


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Sandbox:
    return Sandbox(tmp_path_factory.mktemp("fuzz"))


def edit_tree(tree: Any, edit: tuple[list[int], str, Any]) -> Any:
    """Walk down ``tree`` by the choices, then replace, delete or duplicate the node reached."""
    choices, op, value = edit
    tree = copy.deepcopy(tree)
    parent: Any = None
    key: Any = None
    node = tree
    for choice in choices:
        if isinstance(node, dict) and node:
            k: Any = sorted(node)[choice % len(node)]
        elif isinstance(node, list) and node:
            k = choice % len(node)
        else:
            break
        parent, key, node = node, k, node[k]
    if parent is None:
        return value if op == "replace" else tree
    if op == "replace":
        parent[key] = value
    elif op == "delete":
        del parent[key]
    elif isinstance(parent, list):
        parent.insert(key, copy.deepcopy(node))
    else:
        parent[f"{key}_copy"] = copy.deepcopy(node)
    return tree


def edit_bytes(data: bytes, edit: tuple[str, float, bytes] | None) -> bytes:
    if edit is None:
        return data
    op, where, blob = edit
    at = int(where * len(data))
    return data[:at] if op == "truncate" else data[:at] + blob + data[at:]


def _native_lines(records: Any) -> bytes:
    if not isinstance(records, list):
        return json.dumps(records).encode() + b"\n"
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


GOOD = [json.loads(line) for line in (FIXTURES / "good.jsonl").read_text().splitlines() if line.strip()]


@FUZZ
@given(edits=st.lists(tree_edits, min_size=1, max_size=3), raw=byte_edits)
def test_mutated_native_logs(sandbox: Sandbox, edits: list[tuple[list[int], str, Any]], raw: Any) -> None:
    records: Any = GOOD
    for edit in edits:
        records = edit_tree(records, edit)
    sandbox.check("log.jsonl", edit_bytes(_native_lines(records), raw), "native")


def _json_base(*parts: str, head: int | None = None) -> Any:
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.fail(f"{path} not found: ../shared/data must sit beside the checkout")
    data = json.loads(path.read_text())
    return data[:head] if head else data


@FUZZ
@given(edit=tree_edits, raw=byte_edits)
def test_mutated_inspect_logs(sandbox: Sandbox, edit: tuple[list[int], str, Any], raw: Any) -> None:
    log = _json_base("inspect", "2025-05-12T20-28-13-04-00_popularity.json")
    sandbox.check("popularity.json", edit_bytes(json.dumps(edit_tree(log, edit)).encode(), raw), "inspect")


@FUZZ
@given(edit=tree_edits, raw=byte_edits)
def test_mutated_openai_message_trajectories(sandbox: Sandbox, edit: tuple[list[int], str, Any], raw: Any) -> None:
    trials = _json_base("tau_bench", "gpt-4o-airline.json", head=2)
    data = edit_bytes(json.dumps(edit_tree(trials, edit)).encode(), raw)
    sandbox.check("gpt-4o-airline.json", data, "openai-messages")


LONG_CSV = "run_id,task_id,score,cost_usd,eval_date\nr1,t1,1,0.1,2025-01-02\nr1,t2,0,0.2,2025-01-02\nr2,t1,0.5,,\n"
WIDE_CSV = "agent,eval_date,task-1,task-2,task-3\nGPT-4o,2025-01-10,1,0,0.5\nClaude,20250201,1,,1\n"
cell_edits = st.lists(st.tuples(st.integers(0, 100), st.integers(0, 100), st.text(max_size=12)), min_size=1, max_size=3)


def edit_cells(text: str, edits: list[tuple[int, int, str]]) -> str:
    rows = [line.split(",") for line in text.splitlines()]
    for r, c, value in edits:
        row = rows[r % len(rows)]
        row[c % len(row)] = value
    return "\n".join(",".join(row) for row in rows) + "\n"


@FUZZ
@given(edits=cell_edits, raw=byte_edits)
def test_mutated_long_csv(sandbox: Sandbox, edits: list[tuple[int, int, str]], raw: Any) -> None:
    sandbox.check("mybench.csv", edit_bytes(edit_cells(LONG_CSV, edits).encode(), raw), "csv")


@FUZZ
@given(edits=cell_edits, raw=byte_edits)
def test_mutated_wide_csv(sandbox: Sandbox, edits: list[tuple[int, int, str]], raw: Any) -> None:
    sandbox.check("sheet-bench.csv", edit_bytes(edit_cells(WIDE_CSV, edits).encode(), raw), "csv-wide")
