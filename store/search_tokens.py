"""The search index's tokenizer (store/search_index.py writes the segments): texts in, postings of tokens and word
pairs out, with no per-token work in Python and no regular expression per word.

Tokens: the lower-cased text (DuckDB's ``lower``) cut at every character that is not ``a-z``, ``0-9`` or ``_``
(``TOKEN_SEPARATORS``); a token is a maximal run of those characters. The query side (analytics/search/compute.py,
``query_runs``) cuts the lower-cased query the same way. A word pair is two tokens next to each other in a text,
one vocabulary entry ``"first second"`` (a token never holds a space).

How a batch is cut (``tokenise``): DuckDB rewrites each text once (``regexp_replace`` of every run of separators by
one space: one RE2 pass over the text, ``string_split`` then cuts at spaces) and hands the token lists over as
Arrow; pyarrow's ``dictionary_encode`` gives every token of the batch a local integer; numpy then finds, as integer
arrays, each text's distinct tokens and distinct pairs (a pair is the local ids of two neighbours in one text); only
the batch's distinct tokens and distinct pairs become strings, which DuckDB maps to vocabulary ids (new ones added);
the postings go in sorted by token. (The SQL version it replaced cut each distinct word with RE2 and built every
pair's string in a lambda per text: 4x the build without pairs.)
"""

from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from store.query import query_rows

TOKEN_SEPARATORS = "[^a-z0-9_]+"  # RE2: what separates tokens in lower-cased text

# One batch's texts as token lists (field: position in store.search_index.FIELDS); ``{texts}`` selects
# ``attempt_id, step, field, text``.
_SEQUENCES = f"""
SELECT attempt_id::BIGINT AS attempt_id, step::INTEGER AS step, field::UTINYINT AS field,
       string_split(trim(regexp_replace(lower(text), '{TOKEN_SEPARATORS}', ' ', 'g')), ' ') AS seq
FROM _rl_texts
"""

# The batch's vocabulary (local id, token or pair) -> the segment's token ids, new entries added in token order.
_VOCAB = """
INSERT INTO vocab
SELECT (SELECT coalesce(max(token_id), 0) FROM vocab) + row_number() OVER (ORDER BY token), token, NULL
FROM (SELECT token FROM _rl_local WHERE token <> '') ANTI JOIN vocab USING (token);
"""
# (the empty string, a text without tokens, is no entry: -1, never used)
_IDS = (
    "SELECT coalesce(v.token_id, -1) AS token_id FROM _rl_local l LEFT JOIN vocab v USING (token) ORDER BY l.local_id"
)


def tokenise(con: duckdb.DuckDBPyConnection, texts: str, lo: int, hi: int) -> int:
    """Add to the segment ``con`` writes the postings (tokens and word pairs) of the texts ``texts`` selects for
    ``lo``..``hi`` (columns ``attempt_id, step, field, text``); returns their characters."""
    con.execute(f"CREATE OR REPLACE TEMP TABLE _rl_texts AS {texts}", {"lo": lo, "hi": hi})
    chars = int(query_rows(con, "SELECT coalesce(sum(length(text)), 0) FROM _rl_texts")[0][0])
    table = con.execute(_SEQUENCES).to_arrow_table()
    con.execute("DROP TABLE _rl_texts")
    if table.num_rows == 0:
        return chars
    seq = table.column("seq").combine_chunks()
    flat = pc.list_flatten(seq)
    text_of = pc.list_parent_indices(seq).to_numpy().astype(np.int64)
    encoded = flat.dictionary_encode()
    local = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    words = encoded.dictionary
    n_words = len(words)
    empty = np.flatnonzero(pc.equal(words, "").to_numpy(zero_copy_only=False))
    keep = np.ones(len(local), dtype=bool) if len(empty) == 0 else local != empty[0]
    # each text's distinct tokens: (text, local id) pairs made one integer and made unique
    tok_key = _distinct(text_of[keep] * n_words + local[keep])
    tok_text, tok_local = np.divmod(tok_key, n_words)
    # each word pair where it occurs: neighbours within one text (an empty token only ever stands alone), with the
    # position of its first token in the text's tokens (a phrase's pairs lie at consecutive positions)
    nxt = np.flatnonzero(text_of[1:] == text_of[:-1])
    pair_code = local[nxt] * n_words + local[nxt + 1]
    pair_codes = _distinct(pair_code)
    pair_id = np.searchsorted(pair_codes, pair_code)
    pair_text = text_of[nxt]
    starts = seq.offsets.to_numpy(zero_copy_only=False).astype(np.int64)
    pair_pos = (nxt - (starts[pair_text] - starts[0])).astype(np.int32)
    first, second = np.divmod(pair_codes, n_words)
    pair_words = pc.binary_join_element_wise(words.take(pa.array(first)), words.take(pa.array(second)), " ")
    names = pa.concat_arrays([words.cast(pa.string()), pair_words.cast(pa.string())])
    _rl_local = pa.table({"local_id": pa.array(np.arange(len(names), dtype=np.int64)), "token": names})
    con.register("_rl_local", _rl_local)
    try:
        con.execute(_VOCAB)
        ids = np.asarray(con.execute(_IDS).fetchnumpy()["token_id"], dtype=np.int32)
    finally:
        con.unregister("_rl_local")
    text_rows = np.concatenate([tok_text, pair_text])
    is_token = np.concatenate([np.ones(len(tok_text), dtype=bool), np.zeros(len(pair_text), dtype=bool)])
    _rl_post = pa.table(
        {
            "token_id": pa.array(ids[np.concatenate([tok_local, n_words + pair_id])]),
            "attempt_id": pa.array(table.column("attempt_id").to_numpy()[text_rows]),
            "step": pa.array(table.column("step").to_numpy()[text_rows]),
            "field": pa.array(table.column("field").to_numpy()[text_rows]),
            # a token's posting has no position (null); a pair's, where it occurs
            "pos": pa.array(np.concatenate([np.zeros(len(tok_text), dtype=np.int32), pair_pos]), mask=is_token),
        }
    )
    con.register("_rl_post", _rl_post)
    try:
        con.execute(
            "INSERT INTO postings SELECT token_id, attempt_id, step, field, pos FROM _rl_post "
            "ORDER BY token_id, attempt_id, step, field, pos"
        )
    finally:
        con.unregister("_rl_post")
    return chars


def _distinct(values: np.ndarray) -> np.ndarray:
    """The distinct values, sorted (a sort and a comparison of neighbours: numpy's ``unique`` of integers hashes,
    several times slower here)."""
    if len(values) == 0:
        return values
    ordered = np.sort(values)
    return ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))]
