"""The packaged all-MiniLM-L6-v2 loads offline and embeds sentences sensibly."""

from __future__ import annotations

import numpy as np
import pytest

from analytics import embeddings, gem


@pytest.mark.slow
def test_packaged_model_embeds_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    assert (embeddings.packaged_model_path() / "model.safetensors").exists()
    model = embeddings.Embedder()
    vecs = model.encode(["The cat sat on the mat.", "A cat is sitting on a rug.", "Stock markets fell sharply today."])
    assert vecs.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-4)
    sims = vecs @ vecs.T
    assert sims[0, 1] > sims[0, 2] + 0.3 and sims[0, 1] > sims[1, 2] + 0.3
    text = (
        "Take tram 13 from the main station to Sihlcity. The tram ride takes about ten minutes. "
        "Trams run every few minutes during the day."
    )
    emb = model.encode(gem.split_sentences(text))
    assert 0.2 < gem.response_flow(emb) < 1.0 and gem.response_coherence(emb) > gem.response_flow(emb) - 0.2


def test_unknown_model_path_is_a_project_error(tmp_path) -> None:
    with pytest.raises(embeddings.EmbeddingError):
        embeddings.Embedder(str(tmp_path / "missing")).encode(["x"])
