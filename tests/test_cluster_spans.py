"""Boilerplate inside a segment (a browser driver's envelope around the message that differs): runs of words in a
large share of the documents are cut before the tree's features (analytics/clusters/compute.py)."""

from __future__ import annotations

from analytics.clusters import compute as C

ENVELOPE = "failed: call log waiting for selector {} see the call log for details"
CAUSES = ["the renderer process crashed", "locator resolved to zero elements", "download was blocked by the browser"]


def _texts() -> list[str]:
    return [ENVELOPE.format(f"{c} attempt {w}") for c in CAUSES for w in ("one", "two", "three", "four", "five")]


def test_common_spans_are_cut_and_the_rest_kept() -> None:
    own = [f"a cause of its own worded {w}" for w in ("one", "two", "three", "four", "five")] * 2
    texts = _texts() + own  # the envelope in 15 of 25 documents
    cut = C.cut_common_spans(texts, share=0.5)
    assert all("call log" not in t and "selector" not in t for t in cut[:15])
    assert cut[0] == "the renderer process crashed attempt one"  # what differs stays, as its words
    assert cut[15:] == own  # nothing of these is cut: unchanged
    assert C.cut_common_spans(texts, share=0.7) == texts  # no run of three words in 70% of them
    spans = {("call", "log", "waiting")}  # runs given: cut wherever they are
    assert C.cut_common_spans(texts, share=0.7, spans=spans)[0].startswith("failed for selector the renderer")
    few = texts[:5]  # under 10 documents: nothing is cut
    assert C.cut_common_spans(few, share=0.5) == few
    assert C.cut_common_spans(["call log waiting"] * 12, share=0.5) == ["call log waiting"] * 12  # nothing left


def test_a_final_answer_said_after_anything_is_cut_and_a_tool_result_never() -> None:
    """A closing line said after many different page texts goes; the page text stays; a document of one segment,
    and a tool result said before many different answers, are left as they are."""
    pages = [f"page text {w}" for w in ("sold out", "captcha shown", "card declined", "session expired", "404")]
    docs = [(["i could not finish the task", p], [True, False]) for p in pages]
    docs += [(["i could not finish the task"], [True])]
    docs += [([f"the answer is {w}", "using default timezone"], [True, False]) for w in ("red", "blue", "green", "tea")]
    out = C.cut_said_after_anything(docs, ratio=3.0)
    assert out[:5] == [[p] for p in pages]  # counted 5 times against 1: cut
    assert out[5] == ["i could not finish the task"]  # alone: kept
    assert out[6:] == [ss for ss, _ in docs[6:]]  # the tool's note is counted 4 times, but a result is never cut
    assert C.cut_said_after_anything(docs, ratio=10.0) == [ss for ss, _ in docs]
    free, is_answer, struct = C.document_segments(
        "final answer: i could not finish (differs from the reference) | last result: sold out | status timeout"
    )
    assert free == ["i could not finish", "sold out"] and is_answer == [True, False]
    assert struct == ["differs from the reference", "answer", "status timeout"]


def test_a_frame_is_found_by_the_variety_beside_it_and_a_cause_is_not() -> None:
    """An envelope around many different messages (few of the documents, so no common run) is a frame: the word
    sequences beside it are as varied as the messages; a cause's own words sit beside its few frames only."""
    messages = [f"{c} attempt {w}" for c in CAUSES for w in ("one", "two", "three", "four", "five", "six")]
    framed = [ENVELOPE.format(m) for m in messages]  # 18 documents, each message once
    causes = [f"{c} {w}" for c in CAUSES for w in ("at checkout", "on the cart page")] * 10  # 60: a cause's frames
    words = [C._grams(t, 3)[0] for t in framed + causes]
    found = C.frame_spans(words, n=3, share=0.15)  # 18 distinct neighbours of 78 texts: 23%
    assert ("call", "log", "waiting") in found and ("see", "the", "call") in found
    assert not {g for g in found if set(g) & {"renderer", "locator", "download", "crashed"}}
    assert C.frame_spans(words, n=3, share=0.3) == set()  # a share above the variety: no frame
    cut = C.cut_common_spans(framed + causes, share=0.9, frames=True)  # no common run at 90%: the frames alone
    assert cut[0] == "the renderer process crashed attempt one"
    assert cut[18:] == causes
    assert C.cut_common_spans(framed + causes, share=0.9) == framed + causes  # frames only when asked
