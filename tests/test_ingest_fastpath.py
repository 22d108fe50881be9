"""The fast path of native attempt lines (ingest/fastpath.py) gives exactly what the general path gives.

Each example is a small native log: definitions, then attempts whose fields are drawn from plain values (the
fast path's), other accepted spellings (an integer run id, ``2.0`` tokens, a boolean score, error objects,
unknown fields), invalid values and integers beyond 64 bits. The log is normalised twice, with the fast path
and with it switched off; the rows and the problems (location, field, reason) must be identical.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ingest.native
import ingest.records.definitions
import ingest.records.normaliser
from ingest.errors import ProblemCollector
from ingest.fastpath import FastLine, decode_attempt
from ingest.native import parse_native
from ingest.records import Known, Normaliser

HEADER = [
    {"record": "benchmark", "benchmark": "bin", "scoring": "binary"},
    {"record": "benchmark", "benchmark": "grad", "scoring": "graded"},
    {"record": "task", "benchmark": "bin", "task_id": "t1"},
    {"record": "task", "benchmark": "bin", "task_id": "7"},
    {"record": "task", "benchmark": "grad", "task_id": "t1"},
    {
        "record": "run",
        "run_id": "r1",
        "benchmark": "bin",
        "agent": "a",
        "price_input_per_mtok": 1.5,
        "price_output_per_mtok": 6.0,
    },
    {"record": "run", "run_id": "r2", "benchmark": "grad", "agent": "a"},
    {"record": "run", "run_id": "42", "benchmark": "bin", "agent": "b"},
]
BIG = 2**70

json_leaf = (
    st.none()
    | st.booleans()
    | st.integers(-(2**66), 2**66)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6)
)
json_value = st.recursive(
    json_leaf,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)


# field: (plain values, other values: accepted spellings, invalid ones, big integers)
STEP_FIELDS: dict[str, tuple[st.SearchStrategy[Any], list[Any]]] = {
    "round": (st.integers(0, 9), [2.0, -1, True, BIG]),
    "kind": (st.sampled_from(["tool_call", "final", "thought"]), ["", 3]),
    "tool": (st.sampled_from(["search", "calc"]), [5, "", None, ["t"]]),
    "args": (
        st.dictionaries(st.sampled_from(["q", "id"]), st.text(max_size=8) | st.integers(), max_size=2),
        [{"n": BIG}, "plain", [1, 2], 0],
    ),
    "result": (st.text(max_size=12) | st.text(min_size=1025, max_size=1030), [{"rows": [1]}, 3.5, {"n": BIG}]),
    "content": (st.text(max_size=12), [["a"], 1, {"n": -BIG}]),
    "input_tokens": (st.integers(0, 10**6), [5.0, -3, 2**63, "7"]),
    "output_tokens": (st.integers(0, 10**6), [1.5, 0.0]),
    "latency_s": (st.floats(0, 100), [3, -0.5, False]),
    "error": (st.text(max_size=8), [{"code": 1}, 2]),
    "note": (st.nothing(), ["unknown field"]),
}
ATTEMPT_FIELDS: dict[str, tuple[st.SearchStrategy[Any], list[Any]]] = {
    "sample": (st.integers(0, 3), [1.0, -1, True, BIG]),
    "score": (st.sampled_from([0, 1, 0.0, 1.0, 0.5]), [True, False, 1.5, "1"]),
    "raw_score": (st.floats(0, 5), [3, 7.0]),
    "passed": (st.booleans(), [1]),
    "answer": (st.text(max_size=8), [12, {"a": BIG}, ["x"]]),
    "input_tokens": (st.integers(0, 10**6), [3.0, -1]),
    "output_tokens": (st.integers(0, 10**6), [2**64]),
    "cost_usd": (st.floats(0, 10), [1, -1.0]),
    "latency_s": (st.floats(0, 100), [2]),
    "status": (st.sampled_from(["completed", "timeout", "crashed"]), ["done", 1]),
    "errors": (
        st.lists(st.sampled_from(["HAL", " lc ", "TNI"]), max_size=3),
        [[""], [{"code": "X", "step": 1}], "HAL"],
    ),
    "judge": (st.dictionaries(st.sampled_from(["model", "why"]), st.text(max_size=5), max_size=2), [["j"], {"n": BIG}]),
    "metrics": (
        st.dictionaries(st.sampled_from(["f1", "rouge"]), st.floats(0, 1) | st.none(), max_size=2),
        [{"f1": True}, {"f1": "x"}, [1]],
    ),
    "run_id": (st.sampled_from(["r1", "r2"]), [42, "", " ", "nope"]),
    "task_id": (st.just("t1"), [7, "t9"]),
    "steps": (st.nothing(), [{"round": 1}, [1]]),
    "extra_field": (st.nothing(), ["unknown field"]),
}


def _plain(fields: dict[str, tuple[st.SearchStrategy[Any], list[Any]]], **required: Any) -> st.SearchStrategy[Any]:
    return st.fixed_dictionaries(
        {k: st.just(v) for k, v in required.items()},
        optional={k: plain for k, (plain, _) in fields.items() if k not in required},
    )


def _odd(fields: dict[str, tuple[st.SearchStrategy[Any], list[Any]]]) -> st.SearchStrategy[tuple[str, Any]]:
    """A field and an unusual value for it: one of its listed others, arbitrary JSON, or missing (``...``)."""
    return st.sampled_from(sorted(fields)).flatmap(
        lambda k: st.tuples(st.just(k), st.sampled_from(fields[k][1]) | json_value | st.just(...))
    )


@st.composite
def attempt(draw: st.DrawFn) -> dict[str, Any]:
    """A plain attempt (what the fast path takes), with up to two fields of it or its steps made unusual."""
    record = draw(_plain(ATTEMPT_FIELDS, record="attempt", run_id=draw(st.sampled_from(["r1", "r2"])), task_id="t1"))
    record["steps"] = draw(st.lists(_plain(STEP_FIELDS), max_size=4))
    for _ in range(draw(st.integers(0, 2))):
        steps = record.get("steps")  # an earlier change may have made it missing, or not a list of objects
        objects = [s for s in steps if isinstance(s, dict)] if isinstance(steps, list) else []
        if objects and draw(st.booleans()):
            target = draw(st.sampled_from(objects))
            key, value = draw(_odd(STEP_FIELDS))
        else:
            target = record
            key, value = draw(_odd(ATTEMPT_FIELDS))
        target[key] = value
    return record


def _present(value: Any) -> Any:
    """``value`` without the fields drawn as missing (``...``)."""
    if isinstance(value, dict):
        return {k: _present(v) for k, v in value.items() if v is not ...}
    if isinstance(value, list):
        return [_present(v) for v in value]
    return value


def _line(record: dict[str, Any]) -> str:
    return json.dumps(_present(record))


def normalise(path: Path, data: bytes) -> tuple[dict[str, pa.Table], list[tuple[str, str, str]], int]:
    """Frozen tables, problems and the number of lines the fast path decoded."""
    problems = ProblemCollector()
    records = list(parse_native(path, data, problems))
    bundle = Normaliser(Known(), problems).feed(records)
    found = [(p.location, p.field, p.reason) for p in problems.problems]
    return bundle.freeze(), found, sum(isinstance(rec, FastLine) for _, rec in records)


def both_paths(path: Path, data: bytes, monkeypatch: pytest.MonkeyPatch) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    fast = normalise(path, data)
    with monkeypatch.context() as patch:
        patch.setattr(ingest.native, "decode_attempt", lambda raw: None)
        general = normalise(path, data)
    assert general[2] == 0
    return fast, general


def assert_same(fast: tuple[Any, ...], general: tuple[Any, ...]) -> None:
    assert fast[1] == general[1]
    for name, table in general[0].items():
        assert fast[0][name].equals(table), name


@settings(
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=300,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)  # monkeypatch.context() per example
@given(attempts=st.lists(attempt(), min_size=1, max_size=6))
def test_fast_and_general_paths_agree(
    attempts: list[dict[str, Any]], tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path_factory.getbasetemp() / "fast.jsonl"
    data = "\n".join(_line(r) for r in [*HEADER, *attempts]).encode()
    fast, general = both_paths(path, data, monkeypatch)
    assert_same(fast, general)


PLAIN = {
    "record": "attempt",
    "run_id": "r1",
    "task_id": "t1",
    "sample": 0,
    "score": 1,
    "input_tokens": 1200,
    "output_tokens": 80,
    "latency_s": 3.5,
    "errors": ["HAL"],
    "metrics": {"f1": 0.5},
    "steps": [
        {"round": 1, "kind": "tool_call", "tool": "search", "args": {"q": "x"}, "result": "r" * 2000, "latency_s": 0.2},
        {"round": 2, "kind": "final", "content": "done"},
    ],
}


def test_plain_attempts_take_the_fast_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lines = [*HEADER, PLAIN, {**PLAIN, "sample": 1}]
    data = "\n".join(map(json.dumps, lines)).encode()
    fast, general = both_paths(tmp_path / "plain.jsonl", data, monkeypatch)
    assert fast[2] == 2
    assert fast[1] == [] and fast[0]["steps"].num_rows == 4 and fast[0]["texts"].num_rows == 1
    assert fast[0]["attempts"].column("cost_usd").to_pylist() == [pytest.approx((1200 * 1.5 + 80 * 6.0) / 1e6)] * 2
    assert_same(fast, general)


def test_compact_lines_only_attempts_are_offered_to_the_fast_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Compact lines (as a harness writes them): a line that starts as a benchmark, task, run or rating record is
    not offered to the fast path; attempt lines are, as views of the file's bytes, and a line it hands back (an
    unknown run) is read again from its bytes. Rows and problems are the general path's."""
    lines = [
        *HEADER,
        {"record": "task", "benchmark": "nope", "task_id": "x"},  # refused: unknown benchmark
        PLAIN,
        {**PLAIN, "run_id": "r9"},  # decoded, then handed back: unknown run
        {"sample": 2, **{k: v for k, v in PLAIN.items() if k != "sample"}},  # "record" not its first field
    ]
    data = "\n".join(json.dumps(r, separators=(",", ":")) for r in lines).encode()
    offered: list[Any] = []
    decode = ingest.native.decode_attempt

    def counted(raw: Any) -> Any:
        offered.append(raw)
        return decode(raw)

    with monkeypatch.context() as patch:
        patch.setattr(ingest.native, "decode_attempt", counted)
        fast = normalise(tmp_path / "compact.jsonl", data)
    assert [bytes(raw) for raw in offered] == [line for line in data.split(b"\n") if b'"record":"attempt"' in line]
    assert all(isinstance(raw, memoryview) for raw in offered)
    assert fast[2] == 3
    general = both_paths(tmp_path / "compact.jsonl", data, monkeypatch)[1]
    assert_same(fast, general)
    name = tmp_path / "compact.jsonl"
    assert fast[1] == [
        (f"{name}:9", "benchmark", "unknown benchmark 'nope': define it with a benchmark record first"),
        (f"{name}:11", "run_id", "unknown run 'r9': define it with a run record first"),
    ]


def test_a_task_line_read_before_is_defined_as_the_record_path_defines_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A task line whose bytes were read before (in this process) is defined from that line's row: its benchmark
    still checked, an identical repeat skipped, a conflicting one refused, a line with an error reported as the
    record path reports it. Files read one after another against one Known, with the repeat and without it."""
    compact = [json.dumps(r, separators=(",", ":")) for r in HEADER[:3]]  # benchmarks bin and grad, task bin/t1
    other_t1 = json.dumps({"record": "task", "benchmark": "bin", "task_id": "t1", "level": "L2"}, separators=(",", ":"))
    files = [
        [compact[2], *compact],  # t1 before its benchmark: refused; then defined
        [compact[2], compact[2]],  # repeats of a known definition: skipped
        [other_t1],  # the same task with another level: refused
        [compact[2][:-1]],  # not JSON
        [compact[2]],  # read before, but into a store that has no benchmark bin (a new Known): refused
    ]

    def read_all() -> list[Any]:
        known, out = Known(), []
        for i, lines in enumerate(files):
            known = Known() if i == 4 else known
            problems = ProblemCollector()
            path = tmp_path / f"f{i}.jsonl"
            bundle = Normaliser(known, problems).feed(parse_native(path, "\n".join(lines).encode(), problems))
            out.append(([(p.location, p.field, p.reason) for p in problems.problems], bundle.tasks))
        return out

    ingest.records.definitions._TASK_ROWS.clear()
    loads: list[Any] = []
    load = ingest.records.normaliser.load_record
    with monkeypatch.context() as patch:
        patch.setattr(ingest.records.normaliser, "load_record", lambda raw: loads.append(raw) or load(raw))
        repeated = read_all()
    # read until its row is made (f0's fourth line), then from the row; read again where its benchmark is unknown (f4)
    assert loads.count(compact[2].encode()) == 3
    with monkeypatch.context() as patch:
        patch.setattr(ingest.native, "_TASK", b"\0")  # every task line read by the record path
        assert read_all() == repeated
    assert [found for found, _ in repeated] == [
        [
            (
                f"{tmp_path / 'f0.jsonl'}:1",
                "benchmark",
                "unknown benchmark 'bin': define it with a benchmark record first",
            )
        ],
        [],
        [(f"{tmp_path / 'f2.jsonl'}:1", "task", "'bin/t1' is already defined with different level")],
        [(f"{tmp_path / 'f3.jsonl'}:1", "-", repeated[3][0][0][2])],
        [
            (
                f"{tmp_path / 'f4.jsonl'}:1",
                "benchmark",
                "unknown benchmark 'bin': define it with a benchmark record first",
            )
        ],
    ]
    assert [len(tasks["task_id"]) for _, tasks in repeated] == [1, 0, 0, 0, 0]


def test_each_path_counts_steps_tool_calls_and_rounds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An attempt's step counts, counted in the pass that makes its step rows: a step without a round is in a
    round of its own (its position + 1), a round given twice counts once, a tool call is a step of kind
    ``tool_call`` (given, or a step with a tool and no kind)."""
    steps = [
        {"round": 1, "kind": "tool_call", "tool": "a"},
        {"round": 1, "tool": "b"},  # kind taken from the tool
        {"kind": "message", "content": "x"},  # no round: round 3
        {"round": 3, "kind": "final", "content": "y"},  # round 3 again
        {"kind": "tool_call", "tool": "c", "error": {"code": 1}},  # no round: round 5
    ]
    lines = [*HEADER, {**PLAIN, "steps": steps}, {**PLAIN, "sample": 1, "steps": []}]
    data = "\n".join(map(json.dumps, lines)).encode()
    fast, general = both_paths(tmp_path / "counts.jsonl", data, monkeypatch)
    assert fast[2] == 2
    for tables in (fast[0], general[0]):
        counts = tables["attempts"].select(["n_steps", "n_tool_calls", "n_rounds"]).to_pylist()
        assert counts == [
            {"n_steps": 5, "n_tool_calls": 3, "n_rounds": 3},
            {"n_steps": 0, "n_tool_calls": 0, "n_rounds": 0},
        ]
    assert_same(fast, general)


@pytest.mark.parametrize(
    "late",
    [
        {"kind": ""},  # refused: reported by the general path at steps[2].kind
        {"args": {"n": BIG}},  # accepted: orjson reads it as a float, as the general path does
        {"result": {"n": -BIG}},
    ],
)
def test_a_late_step_the_fast_path_cannot_take_leaves_no_rows_behind(
    late: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = {**PLAIN, "steps": [*PLAIN["steps"], {"tool": "calc", **late}]}
    raw = json.dumps(record).encode()
    assert decode_attempt(raw) is not None  # decoded by the fast path, then handed back to the general one
    data = "\n".join(map(json.dumps, HEADER)).encode() + b"\n" + raw
    fast, general = both_paths(tmp_path / "late.jsonl", data, monkeypatch)
    assert_same(fast, general)
    if late.get("kind") == "":
        assert fast[1] == [(f"{tmp_path / 'late.jsonl'}:9", "steps[2].kind", "must not be empty")]
    else:
        assert fast[1] == [] and fast[0]["steps"].num_rows == 3


@pytest.mark.parametrize(
    "line",
    [
        b'{"record":"attempt","run_id":"r1","task_id":"t1","score":1,"answer":"a\\ud800"}',  # lone surrogate
        b'{"record":"attempt","run_id":"r1","task_id":"t1","score":1,"latency_s":1e400}',  # beyond double range
        b'{"record":"attempt","run_id":"r1","task_id":"t1","score":1,"answer":"\xff"}',  # not UTF-8
        b'{"record":"attempt","run_id":"r1","task_id":"t1","score":1,}',  # not JSON
        b'\xef\xbb\xbf{"record":"attempt","run_id":"r1","task_id":"t1","score":1}',  # byte order mark
    ],
)
def test_lines_only_the_general_path_reads_or_refuses(
    line: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert decode_attempt(line) is None
    data = "\n".join(map(json.dumps, HEADER)).encode() + b"\n" + line
    fast, general = both_paths(tmp_path / "odd.jsonl", data, monkeypatch)
    assert_same(fast, general)
    if b"ud800" in line:  # the stdlib reads it, but it is not text: refused where it is, not a crash at the write
        assert fast[1] == [
            (
                f"{tmp_path / 'odd.jsonl'}:9",
                "-",
                "invalid text: a \\u escape makes a lone UTF-16 surrogate, which is not a character",
            )
        ]
