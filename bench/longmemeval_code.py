"""LongMemEval's own retrieval scoring, transcribed: the independent oracle for memlab's
``lme_*`` metrics and for the recorded "LongMemEval's code" rows.

Source: github.com/xiaowu0162/LongMemEval at commit 9e0b455f4ef0e2ab8f2e582289761153549043fc,
MIT licence, Copyright (c) 2024 Di Wu:

- ``src/retrieval/eval_utils.py``: ``dcg``, ``ndcg``, ``evaluate_retrieval``,
  ``evaluate_retrieval_turn2session``, unchanged except ``np.asfarray`` (removed in NumPy 2)
  written as ``np.asarray(..., dtype=float)``;
- ``src/retrieval/run_retrieval.py``: ``process_item_flat_index`` (corpus and corpus ids:
  user turns, ``noans`` renaming), the ``flat-bm25`` branch of ``run_flat_retrieval``, the
  gold rule (``correct_docs``: ids containing "answer"), the metric loop over
  k = 1, 3, 5, 10, 30, 50, and the averaging with its skip rules (abstention ids; questions
  with no user turn marked has_answer), taken out of the multiprocessing driver. One
  change: a turn without ``has_answer`` counts as false (their code asserts the field in
  answer sessions, which the oracle file, marking only the true ones, would fail).

Nothing here imports memlab: a test or bench maps memlab's ranked lists onto these corpus
ids (``rankings_from_turn_ids``) and compares.
"""

from __future__ import annotations

import numpy as np

KS = [1, 3, 5, 10, 30, 50]


# --- src/retrieval/eval_utils.py ---------------------------------------------------------------
def dcg(relevances, k):
    """Discounted Cumulative Gain at k."""
    relevances = np.asarray(relevances, dtype=float)[:k]
    if relevances.size:
        return relevances[0] + np.sum(relevances[1:] / np.log2(np.arange(2, relevances.size + 1)))
    return 0.


def ndcg(rankings, correct_docs, corpus_ids, k=10):
    """Normalized Discounted Cumulative Gain at k."""
    relevances = [1 if doc_id in correct_docs else 0 for doc_id in corpus_ids]
    sorted_relevances = [relevances[idx] for idx in rankings[:k]]
    ideal_relevance = sorted(relevances, reverse=True)
    ideal_dcg = dcg(ideal_relevance, k)
    actual_dcg = dcg(sorted_relevances, k)
    if ideal_dcg == 0:
        return 0.
    return actual_dcg / ideal_dcg


def evaluate_retrieval(rankings, correct_docs, corpus_ids, k=10):
    recalled_docs = set(corpus_ids[idx] for idx in rankings[:k])
    recall_any = float(any(doc in recalled_docs for doc in correct_docs))
    recall_all = float(all(doc in recalled_docs for doc in correct_docs))
    ndcg_score = ndcg(rankings, correct_docs, corpus_ids, k)
    return recall_any, recall_all, ndcg_score


def evaluate_retrieval_turn2session(rankings, correct_docs, corpus_ids, k=10):
    # convert turn-level labels/results into session-level and then evaluate
    def strip_turn_id(docid):
        return '_'.join(docid.split('_')[:-1])
    correct_docs = list(set([strip_turn_id(x) for x in correct_docs]))

    # revise k to handle document-level retrieval
    corpus_ids = [strip_turn_id(x) for x in corpus_ids]
    effective_k = k
    unique_docids = set(corpus_ids[idx] for idx in rankings[:effective_k])
    while effective_k <= len(corpus_ids) and len(unique_docids) < k:
        effective_k += 1
        unique_docids = set(corpus_ids[idx] for idx in rankings[:effective_k])

    return evaluate_retrieval(rankings, correct_docs, corpus_ids, k=effective_k)


# --- src/retrieval/run_retrieval.py ------------------------------------------------------------
def process_item_flat_index(data, granularity, sess_id, timestamp):
    corpus = []

    if granularity == 'session':
        text = ' '.join([interact['content'] for interact in data if interact['role'] == 'user'])
        corpus.append(text)
        ids = [sess_id]
        if 'answer' in sess_id and all([not turn.get('has_answer', False)
                                        for turn in [x for x in data if x['role'] == 'user']]):
            ids = [sess_id.replace('answer', 'noans')]
    elif granularity == 'turn':
        ids = []
        for i_turn, turn in enumerate(data):
            if turn['role'] == 'user':
                corpus.append(turn['content'])
                if 'answer' not in sess_id:
                    ids.append(sess_id + '_' + str(i_turn+1))
                else:
                    if turn.get('has_answer', False):
                        ids.append(sess_id + '_' + str(i_turn+1))
                    else:
                        ids.append((sess_id + '_' + str(i_turn+1)).replace('answer', 'noans'))
                        assert 'answer' not in ids[-1]
    else:
        raise NotImplementedError

    return corpus, ids, [timestamp for _ in corpus]


def corpus_of(entry, granularity='turn'):
    """Step 1 of ``batch_get_retrieved_context_and_eval`` (no index expansion): the corpus,
    its ids and the gold ids of one question."""
    corpus, corpus_ids = [], []
    for cur_sess_id, sess_entry, ts in zip(entry['haystack_session_ids'], entry['haystack_sessions'],
                                           entry['haystack_dates']):
        cur_items, cur_ids, _ = process_item_flat_index(sess_entry, granularity, cur_sess_id, ts)
        corpus += cur_items
        corpus_ids += cur_ids
    correct_docs = list(set([doc_id for doc_id in corpus_ids if "answer" in doc_id]))
    return corpus, corpus_ids, correct_docs


def flat_bm25_rankings(query, corpus):
    """The ``flat-bm25`` branch of ``run_flat_retrieval``."""
    from rank_bm25 import BM25Okapi

    tokenized_corpus = [doc.split(" ") for doc in corpus]
    bm25 = BM25Okapi(tokenized_corpus)
    scores = bm25.get_scores(query.split(" "))
    return np.argsort(scores)[::-1]


def question_metrics(rankings, correct_docs, corpus_ids, granularity='turn', ks=KS):
    """Step 3: ``{'session': {...}, 'turn': {...}}`` for one question (``ks``: their loop's
    [1, 3, 5, 10, 30, 50] unless a test asks for others)."""
    metrics = {'session': {}, 'turn': {}}
    for k in ks:
        recall_any, recall_all, ndcg_any = evaluate_retrieval(rankings, correct_docs, corpus_ids, k=k)
        metrics[granularity].update({'recall_any@{}'.format(k): recall_any, 'recall_all@{}'.format(k): recall_all,
                                     'ndcg_any@{}'.format(k): ndcg_any})
        if granularity == 'turn':
            recall_any, recall_all, ndcg_any = evaluate_retrieval_turn2session(rankings, correct_docs, corpus_ids, k=k)
            metrics['session'].update({'recall_any@{}'.format(k): recall_any,
                                       'recall_all@{}'.format(k): recall_all,
                                       'ndcg_any@{}'.format(k): ndcg_any})
    return metrics


def skipped(entry):
    """Why ``main`` leaves a question out of the averages: 'abstention', 'no_target' or None."""
    if '_abs' in entry['question_id']:
        return 'abstention'
    if not any(('has_answer' in turn) and (turn['has_answer'])
               for turn in [x for y in entry['haystack_sessions'] for x in y if x['role'] == 'user']):
        return 'no_target'
    return None


def average(entries, metrics):
    """``main``'s averaging: the mean of each metric over the questions not skipped, and the
    skipped question ids by reason."""
    averaged = {'session': {}, 'turn': {}}
    ignored = {'abstention': set(), 'no_target': set()}
    for t in ['session', 'turn']:
        for k in metrics[0][t]:
            results_list = []
            for entry, m in zip(entries, metrics):
                why = skipped(entry)
                if why is not None:
                    ignored[why].add(entry['question_id'])
                    continue
                results_list.append(m[t][k])
            averaged[t][k] = np.mean(results_list)
    return averaged, ignored


def rankings_from_turn_ids(entry, corpus_ids, turns):
    """Corpus indices of ranked turns given as (published session id, 1-based turn position)
    pairs (memlab's turn ids map to these): the first corpus unit of each."""
    index = {}
    for i, cid in enumerate(corpus_ids):
        index.setdefault(cid.replace('noans', 'answer'), i)
    return [index[f"{sid}_{pos}"] for sid, pos in turns]
