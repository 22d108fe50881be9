"""Layers only reach the right way (README "Layout"): store/ at the bottom, then ingest, analytics (pure: it never
writes), jobs (derived data computed with analytics and kept through the store's one writer), then ui and pages;
``analytics/cli.py`` is the command line, on top like a page. Pages and ui use only the store's public API
(``import store``); all write SQL lives under store/."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.conftest import ROOT

RULES = {
    "store": {"streamlit", "ui", "pages", "analytics", "ingest", "jobs"},
    "ingest": {"streamlit", "ui", "pages", "analytics", "jobs"},
    "analytics": {"streamlit", "ui", "pages", "jobs"},
    "jobs": {"streamlit", "ui", "pages"},
    "pages": {"duckdb"},
    "ui": {"duckdb", "pages"},
}
# The command line sits on top like a page: it may start jobs (each report imports only what it runs).
ENTRY_POINTS = {"analytics/cli.py": {"jobs"}}
# What only writes: analytics (the command line apart) never opens a writer nor calls the store's write functions.
STORE_WRITES = {"writer", "publish", "derived", "transaction", "delete_run", "export_parquet"}
# The store's internals: what may be imported only inside store/ (others use ``store`` and its writer modules).
STORE_INTERNALS = {
    *("store.backends", "store.sessions", "store.lake", "store.paths", "store.migrate", "store.query"),
    *("store.filters", "store.writelock"),
}
# Asking which kind a store is (a DuckDB file, a Parquet folder, a lake): only store/ may; callers ask the Store.
KIND_ASK = re.compile(r"\b(is_lake|is_parquet_folder)\b|isinstance\([^)]*\b(Lake|FileStore|ParquetStore|LakeStore)\b")
PUBLIC_ST = ("streamlit.testing", "streamlit.components", "streamlit.column_config")
# The one exception, named: no public API gives uploaded files back to the server's memory budget (issue 30).
ALLOWED_INTERNALS = {
    "ui/upload_memory.py": {"streamlit.runtime.scriptrunner", "streamlit.runtime.scriptrunner.get_script_run_ctx"}
}
WRITE_SQL = re.compile(
    r"\b(INSERT\s+(OR\s+\w+\s+)?INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|"
    r"CREATE\s+(OR\s+REPLACE\s+)?(TEMP\s+|TEMPORARY\s+)?(TABLE|VIEW|SEQUENCE|INDEX|MACRO)|"
    r"DROP\s+(TABLE|VIEW|SEQUENCE|INDEX|MACRO|SCHEMA)|ALTER\s+TABLE)\b",
    re.IGNORECASE,
)


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports (``from a.b import c`` gives ``a.b`` and ``a.b.c``), lazy imports included."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {  # ``if TYPE_CHECKING:`` imports are for annotations: no dependency at run time
        id(n)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and isinstance(block.test, ast.Name) and block.test.id == "TYPE_CHECKING"
        for n in ast.walk(block)
    }
    mods: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            mods.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            mods.add(node.module)
            mods.update(f"{node.module}.{alias.name}" for alias in node.names)
    return mods


def imported_roots(path: Path) -> set[str]:
    return {m.split(".")[0] for m in imported_modules(path)}


@pytest.mark.parametrize("layer", sorted(RULES))
def test_layer_imports(layer: str) -> None:
    files = sorted((ROOT / layer).rglob("*.py"))
    assert files, f"{layer}/ has no Python files"
    offences = {
        name: sorted(imported_roots(f) & RULES[layer] - ENTRY_POINTS.get(name, set()))
        for f in files
        for name in [str(f.relative_to(ROOT))]
    }
    assert {f: bad for f, bad in offences.items() if bad} == {}


def store_writes_used(path: Path) -> set[str]:
    """The store's write functions a file imports (``from store import writer``) or calls (``store.writer``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    used = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "store":
            used |= {a.name for a in node.names} & STORE_WRITES
            used |= {node.module.split(".")[1]} & STORE_WRITES if "." in node.module else set()
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in {"store", "rdb"}:
            used |= {node.attr} & STORE_WRITES
    return used


def test_analytics_never_writes() -> None:
    """analytics/ computes and reads; keeping a result is a job's (jobs/) or ingest's, through the one writer."""
    files = [f for f in sorted((ROOT / "analytics").rglob("*.py")) if str(f.relative_to(ROOT)) not in ENTRY_POINTS]
    offences = {str(f.relative_to(ROOT)): sorted(store_writes_used(f)) for f in files}
    assert {f: bad for f, bad in offences.items() if bad} == {}
    assert store_writes_used(ROOT / "jobs" / "irt.py"), "the check finds a writer's use"


@pytest.mark.parametrize("layer", ["analytics", "ingest", "jobs", "ui", "pages"])
def test_store_internals_stay_inside_the_store(layer: str) -> None:
    files = sorted((ROOT / layer).rglob("*.py")) + ([ROOT / "app.py"] if layer == "pages" else [])
    offences = {str(f.relative_to(ROOT)): sorted(imported_modules(f) & STORE_INTERNALS) for f in files}
    assert {f: bad for f, bad in offences.items() if bad} == {}


def test_callers_never_ask_which_kind_of_store() -> None:
    """Outside store/, a store is opened and asked (``store.open(db).sandbox(...)``), never checked for its kind."""
    folders = [
        d for d in sorted(ROOT.iterdir()) if d.is_dir() and d.name[0] != "." and d.name not in {"store", "tests"}
    ]
    files = [ROOT / "app.py", *(f for d in folders for f in d.rglob("*.py"))]
    offences = {
        str(f.relative_to(ROOT)): m.group(0) for f in files if (m := KIND_ASK.search(f.read_text(encoding="utf-8")))
    }
    assert offences == {}
    assert KIND_ASK.search("if isinstance(loc, Lake) or is_parquet_folder(loc):"), "the check finds an ask"
    assert any(KIND_ASK.search(f.read_text(encoding="utf-8")) for f in (ROOT / "store").rglob("*.py"))


def test_write_sql_lives_only_in_the_store() -> None:
    """One writer: no INSERT/UPDATE/DELETE/CREATE/DROP/ALTER text in product code outside store/."""
    files = [ROOT / "app.py"]
    for layer in ("analytics", "ingest", "jobs", "ui", "pages"):
        files += sorted((ROOT / layer).rglob("*.py")) + sorted((ROOT / layer).rglob("*.sql"))
    offences = {
        str(f.relative_to(ROOT)): sorted({m.group(0) for m in WRITE_SQL.finditer(f.read_text(encoding="utf-8"))})
        for f in files
    }
    assert {f: bad for f, bad in offences.items() if bad} == {}
    assert WRITE_SQL.search((ROOT / "store" / "ingest_writer.py").read_text(encoding="utf-8")), (
        "the pattern finds writes"
    )


def test_pages_hold_no_sql() -> None:
    for page in (ROOT / "pages").glob("*.py"):
        if page.name == "sql.py":  # the SQL console shows example queries to the user
            continue
        text = page.read_text(encoding="utf-8").upper()
        for keyword in ("SELECT ", "INSERT INTO", "CREATE TABLE"):
            assert keyword not in text, f"{page.name} contains SQL ({keyword.strip()})"


def test_no_private_streamlit_api_and_no_ui_circle() -> None:
    """ui/ and pages/ use Streamlit's public API only; ui.common never reaches back into ui.shell."""
    for layer in ("ui", "pages"):
        for f in sorted((ROOT / layer).rglob("*.py")):
            private = {m for m in imported_modules(f) if m.startswith("streamlit.") and not m.startswith(PUBLIC_ST)}
            private -= ALLOWED_INTERNALS.get(f.relative_to(ROOT).as_posix(), set())
            assert not private, f"{f.relative_to(ROOT)} imports Streamlit internals: {sorted(private)}"
    assert not {m for m in imported_modules(ROOT / "ui" / "common.py") if m.startswith("ui.shell")}


READERS = {
    f"ingest.{m}" for m in ("csv_long", "csv_wide", "inspect_log", "lm_eval", "native", "openai_messages", "otlp")
}
# a reader may build on another only where its format is a variant of the other's (wide CSV is long CSV pivoted)
READER_VARIANTS = {"ingest.csv_wide": {"ingest.csv_long"}}


def test_validator_and_readers_stay_apart() -> None:
    """The validator imports no reader, and readers share helpers (ingest/jsonline.py) instead of each other."""
    assert not imported_modules(ROOT / "ingest" / "records.py") & READERS
    for reader in sorted(READERS):
        path = ROOT / (reader.replace(".", "/") + ".py")
        others = {m for m in imported_modules(path) if m in READERS} - {reader}
        assert others <= READER_VARIANTS.get(reader, set()), f"{reader} imports {sorted(others)}"


# Every analytics feature is split by role (docs/CONVENTIONS.md): ``load`` is the only module that queries,
# ``figures`` the only one that imports plotly; compute and report modules do neither. Shared helpers that hold one
# role are named here; the SQL console's whole job is to run a person's SQL.
QUERY_CALL = re.compile(r"\b(query_df|query_rows|load_sql)\(|\.(execute|sql)\(")
QUERY_ALLOWED = {"analytics/sqlfiles.py"}
QUERY_ALLOWED_DIRS = ("analytics/sql_console/",)
PLOTLY_ALLOWED: set[str] = set()
# Modules not yet split by role (issue 34): each entry goes when its feature is split; the list ends empty.
NOT_YET_SPLIT = {
    "analytics/catalog.py",
    "analytics/clusters/report.py",
    "analytics/diff.py",
    "analytics/doctor.py",
    "analytics/embeddings.py",
    "analytics/errors.py",
    "analytics/export.py",
    "analytics/gate.py",
    "analytics/gem/tables.py",
    "analytics/irt/data.py",
    "analytics/irt/fits.py",
    "analytics/judge.py",
    "analytics/leaderboard.py",
    "analytics/plaintext.py",
    "analytics/plan.py",
    "analytics/progress.py",
    "analytics/review.py",
    "analytics/rules.py",
    "analytics/run_health.py",
    "analytics/scorers.py",
    "analytics/search.py",
    "analytics/tmf/report.py",
    "analytics/trajectory.py",
}


def role_offences(path: Path) -> list[str]:
    """What a module of analytics/ does outside its role: queries outside ``load``, plotly outside ``figures``."""
    name = path.relative_to(ROOT).as_posix()
    found = []
    queries = QUERY_CALL.search(path.read_text(encoding="utf-8"))
    if queries and path.stem != "load" and name not in QUERY_ALLOWED and not name.startswith(QUERY_ALLOWED_DIRS):
        found.append(f"queries ({queries.group(0)}) outside a load module")
    if "plotly" in imported_roots(path) and path.stem != "figures" and name not in PLOTLY_ALLOWED:
        found.append("imports plotly outside a figures module")
    return found


def test_features_are_split_by_role() -> None:
    files = sorted((ROOT / "analytics").rglob("*.py"))
    offences = {f.relative_to(ROOT).as_posix(): role_offences(f) for f in files}
    assert {f: bad for f, bad in offences.items() if bad and f not in NOT_YET_SPLIT} == {}
    assert sorted(f for f in NOT_YET_SPLIT if not offences.get(f)) == [], "split: take it off NOT_YET_SPLIT"
    assert QUERY_CALL.search((ROOT / "analytics" / "tmf" / "load.py").read_text(encoding="utf-8")), "finds queries"
    assert "plotly" in imported_roots(ROOT / "analytics" / "tmf" / "figures.py"), "finds plotly"
