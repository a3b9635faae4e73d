"""BM25 over an incremental inverted index (append and delete without rebuilding).

Rebuilding rank_bm25 after every appended dialogue turn is quadratic over a replay;
this index appends in time proportional to the record's tokens and scores a query by
visiting only the postings of its terms.
"""

from __future__ import annotations

import math
from array import array
from collections import Counter, defaultdict

import numpy as np

from ..base import MemlabError, Param
from ..records import Hit, MemoryRecord
from .base import Retriever
from ..filters import Where, filter_view, matches
from .tokenize import Tokenizer

VARIANTS = ("okapi", "lucene")


class BM25Retriever(Retriever):
    """Okapi BM25, score-identical to ``rank_bm25.BM25Okapi`` on the same token lists.

    With N documents, n(t) documents containing t, f(t, d) the count of t in d, |d| the
    token count of d and avgdl the mean |d| over all N documents (empty ones included)::

        score(q, d) = sum over query tokens t (repeats count) of
                      idf(t) * f(t, d) * (k1 + 1) / (f(t, d) + k1 * (1 - b + b * |d| / avgdl))

    ``variant="okapi"`` (rank_bm25's BM25Okapi, quirks included)::

        idf(t) = ln(N - n(t) + 0.5) - ln(n(t) + 0.5)
        if idf(t) < 0: idf(t) = epsilon * average_idf

    where average_idf is the mean of the unfloored idf over the whole vocabulary (every
    term with n(t) > 0). Terms in more than half the documents therefore get a small
    positive idf when average_idf > 0, and a term in exactly half gets 0.
    ``variant="lucene"``: idf(t) = ln(1 + (N - n(t) + 0.5) / (n(t) + 0.5)), never negative.

    What is returned: the documents containing at least one query term, ordered by score
    (ties: insertion order), even when that score is 0 or negative (rank_bm25 scores
    every document; documents without a query term would all score 0 there). Unknown
    terms contribute nothing; an empty index or a query without known terms gives [].
    Every added record is a document (a blank one has length 0 and counts in N and
    avgdl, as it would in rank_bm25). Changing ``tokenizer`` re-indexes the kept records.
    """

    name = "bm25"
    exact_search = True  # scores every record, ties by insertion order

    constraints = {
        "variant": Param(choices=VARIANTS),
        "k1": Param(float, ge=0, finite=True),
        "b": Param(float, ge=0, le=1),
        "epsilon": Param(float, finite=True),
    }

    def __init__(self, tokenizer: Tokenizer | None = None, k1: float = 1.5, b: float = 0.75,
                 epsilon: float = 0.25, variant: str = "okapi"):
        super().__init__()
        self.tokenizer = tokenizer
        self.k1 = k1
        self.b = b
        self.epsilon = epsilon
        self.variant = variant
        self._clear()
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        self._tokenizer = self._resolve("tokenizer", lambda: Tokenizer())
        # k1, b, epsilon and variant are read at query time; a changed tokenizer (or
        # tokenizer setting) means the kept records must be tokenized again.
        key = (id(self._tokenizer), repr(self._tokenizer.get_params()))
        if self._n_docs and key != getattr(self, "_tokenizer_key", key):
            kept = self.records()
            self._clear()
            self._add(kept)
        self._tokenizer_key = key

    # -- index ------------------------------------------------------------------------
    # A posting is one int64: (slot << 24) | code, where code numbers the document's
    # (tf, |d|) pair in a small shared table. Slots grow in insertion order, so each
    # term's postings are sorted. At query time the BM25 term weight
    # tf * (k1 + 1) / (tf + k1 * (1 - b + b * |d| / avgdl)) is computed once per distinct
    # pair (a few hundred in dialogue text) and gathered per posting, so a query copies 8
    # bytes per posting and does no per-posting arithmetic beyond a gather and a multiply.
    _CODE_BITS = 24

    def _clear(self) -> None:
        self._slot: dict[str, int] = {}            # id -> slot
        self._slot_id: list[str | None] = []       # slot -> id (None once removed)
        self._slot_terms: list[tuple[str, ...] | None] = []  # slot -> its distinct terms
        self._slot_view: list[dict | None] = []    # filter view taken at add time
        self._slot_len: list[int] = []
        self._alive = np.zeros(64, dtype=bool)
        self._postings: dict[str, list] = {}       # term -> [df, array("q") of postings]
        self._df_hist: defaultdict[int, int] = defaultdict(int)  # df -> number of terms with it
        self._codes: dict[tuple[int, int], int] = {}  # (tf, |d|) -> code
        self._code_tf = np.zeros(64, dtype=np.float64)
        self._code_len = np.zeros(64, dtype=np.float64)
        self._n_docs = 0
        self._total_len = 0
        self._dead = 0
        self._avg_idf_cache: tuple[int, float] | None = None
        self._weight_cache: tuple[tuple, np.ndarray] | None = None
        self._version = 0

    def _code(self, tf: int, length: int) -> int:
        code = len(self._codes)
        if code >= 1 << self._CODE_BITS:
            raise MemlabError("BM25Retriever: more than 16.7 million distinct (term count, "
                              "document length) pairs; the index cannot encode them")
        if code >= len(self._code_tf):
            self._code_tf = np.concatenate([self._code_tf, np.zeros(len(self._code_tf))])
            self._code_len = np.concatenate([self._code_len, np.zeros(len(self._code_len))])
        self._code_tf[code] = tf
        self._code_len[code] = length
        self._codes[(tf, length)] = code
        return code

    def _add(self, records: list[MemoryRecord]) -> None:
        needed = len(self._slot_id) + len(records)
        if needed > len(self._alive):
            alive = np.zeros(max(needed, 2 * len(self._alive)), dtype=bool)
            alive[:len(self._alive)] = self._alive
            self._alive = alive
        tokenize = self._tokenizer
        hist, postings, codes = self._df_hist, self._postings, self._codes
        shift = self._CODE_BITS
        for record in records:
            tokens = tokenize(record.content)
            slot = len(self._slot_id)
            terms = dict(Counter(tokens))
            n_tokens = len(tokens)
            base = slot << shift
            # most terms occur once in a document: one code lookup per document for them
            code1 = codes.get((1, n_tokens), -1)
            if code1 < 0 and n_tokens:
                code1 = self._code(1, n_tokens)
            self._slot[record.id] = slot
            self._slot_id.append(record.id)
            self._slot_terms.append(tuple(terms))  # removal needs the terms only: no dict per document
            self._slot_view.append(filter_view(record))
            self._slot_len.append(n_tokens)
            self._alive[slot] = True
            self._n_docs += 1
            self._total_len += n_tokens
            for term, tf in terms.items():
                if tf == 1:
                    code = code1
                else:
                    code = codes.get((tf, n_tokens), -1)
                    if code < 0:
                        code = self._code(tf, n_tokens)
                entry = postings.get(term)
                if entry is None:
                    postings[term] = [1, array("q", (base | code,))]
                    hist[1] += 1
                    continue
                old = entry[0]
                entry[0] = old + 1
                hist[old] -= 1
                hist[old + 1] += 1
                entry[1].append(base | code)
        self._version += 1

    def _remove(self, ids: list[str]) -> None:
        hist, postings = self._df_hist, self._postings
        for i in ids:
            slot = self._slot.pop(i)
            for term in self._slot_terms[slot] or ():
                entry = postings[term]
                old = entry[0]
                hist[old] -= 1
                if old > 1:
                    entry[0] = old - 1
                    hist[old - 1] += 1
                else:  # the term leaves the vocabulary
                    del postings[term]
            self._n_docs -= 1
            self._total_len -= self._slot_len[slot]
            self._alive[slot] = False
            self._slot_id[slot] = None
            self._slot_terms[slot] = None
            self._slot_view[slot] = None
            self._dead += 1
        self._version += 1
        # Postings keep dead slots until they outnumber the live documents.
        if self._dead > max(1024, self._n_docs):
            self._compact()

    def _compact(self) -> None:
        live = [self._records[i] for i in self._slot_id if i is not None]
        self._clear()
        self._add(live)

    # -- scoring ----------------------------------------------------------------------
    def _average_idf(self) -> float:
        """Mean unfloored Okapi idf over the vocabulary, from the df histogram (cached)."""
        cached = self._avg_idf_cache
        if cached is not None and cached[0] == self._version:
            return cached[1]
        n = self._n_docs
        hist = {d: c for d, c in self._df_hist.items() if c}
        dfs = np.fromiter(hist.keys(), dtype=np.float64, count=len(hist))
        counts = np.fromiter(hist.values(), dtype=np.float64, count=len(hist))
        idf = np.log(n - dfs + 0.5) - np.log(dfs + 0.5)
        value = float(np.dot(counts, idf) / counts.sum())
        self._avg_idf_cache = (self._version, value)
        return value

    def _idf(self, df: int) -> float:
        n = self._n_docs
        if self.variant == "lucene":
            return math.log(1.0 + (n - df + 0.5) / (df + 0.5))
        idf = math.log(n - df + 0.5) - math.log(df + 0.5)
        return idf if idf >= 0 else self.epsilon * self._average_idf()

    def _term_weights(self) -> np.ndarray:
        """tf * (k1 + 1) / (tf + k1 * (1 - b + b * |d| / avgdl)) for every (tf, |d|) code."""
        k1, b = float(self.k1), float(self.b)
        key = (self._version, len(self._codes), k1, b)
        cached = self._weight_cache
        if cached is not None and cached[0] == key:
            return cached[1]
        n = len(self._codes)
        tf, length = self._code_tf[:n], self._code_len[:n]
        avgdl = self._total_len / self._n_docs
        weights = tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / avgdl))
        self._weight_cache = (key, weights)
        return weights

    def score_slots(self, tokens: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """(slots of live documents containing a query token, their scores), slot order."""
        if not self._n_docs or not tokens:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        postings = self._postings
        entries, weights = [], []
        for term, qtf in Counter(tokens).items():
            entry = postings.get(term)
            if entry is not None:
                entries.append(entry[1])
                weights.append(self._idf(entry[0]) * qtf)
        if not entries:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        if len(entries) == 1:
            packed = np.frombuffer(entries[0], dtype=np.int64)
            idf: float | np.ndarray = weights[0]
        else:
            packed = np.concatenate([np.frombuffer(e, dtype=np.int64) for e in entries])
            idf = np.repeat(weights, [len(e) for e in entries])
        slots = packed >> self._CODE_BITS
        contrib = self._term_weights()[packed & ((1 << self._CODE_BITS) - 1)]
        contrib *= idf
        size = len(self._slot_id)
        scores = np.bincount(slots, weights=contrib, minlength=size)
        if min(weights) > 0:
            hit = scores > 0  # every term weight is > 0: a match is exactly a positive score
        else:
            hit = np.zeros(size, dtype=bool)
            hit[slots] = True
        if self._dead:
            hit &= self._alive[:size]
        candidates = hit.nonzero()[0]  # on a bool mask: several times faster than on floats
        return candidates, scores[candidates]

    def scores(self, query: str) -> dict[str, float]:
        """Score of every document containing a query term, keyed by id (for tests and analysis)."""
        slots, values = self.score_slots(self._tokenizer(query))
        return {self._slot_id[s]: float(v) for s, v in zip(slots.tolist(), values.tolist())}

    def search(self, query: str, k: int = 5, *, where: Where | None = None,
               now: float | None = None) -> list[Hit]:
        k = self._check_search(k, where)
        if k == 0:
            return []
        slots, values = self.score_slots(self._tokenizer(query))
        if where and len(slots):
            views = self._slot_view
            keep = np.fromiter((matches(views[s], where) for s in slots.tolist()),
                               dtype=bool, count=len(slots))
            slots, values = slots[keep], values[keep]
        if len(slots) > k:
            # Everything scoring at least the k-th best value, ties included, then an exact sort.
            kth = np.partition(values, len(values) - k)[len(values) - k]
            keep = (values >= kth).nonzero()[0]
            slots, values = slots[keep], values[keep]
        # score desc, then slot (= insertion order); a short list, so a Python sort
        best = sorted(zip(values.tolist(), slots.tolist()), key=lambda p: (-p[0], p[1]))[:k]
        slot_id = self._slot_id
        return self._hits([(slot_id[s], v) for v, s in best])
