"""check_strategy and check_retriever: the generic checks every strategy and every
retriever must pass (built-in or user-written).

Run them on a fresh instance::

    from memlab.testing import check_retriever, check_strategy
    check_strategy(MyStrategy(alpha=0.3))
    check_retriever(MyRetriever(k1=1.2))

Besides the checks every one runs, some are chosen by what the subject declares in
``capabilities()`` (as scikit-learn's estimator checks by tags): a strategy whose asking
changes nothing answers a second time the same; one with ``query_time_params`` switched by
``set_query_params`` behaves as one built with the value; an ``exact_search`` retriever's
top k is the top of any deeper search.

Each check raises ``AssertionError`` with the check's name; on success the names of the
checks that ran are returned. ``hidden_parts`` lists the parts a component holds outside
its parameters (the ``parts_are_parameters`` check); ``check_records`` and
``retriever_records`` are the records the checks replay, ``T0`` their first timestamp.

Modules: ``strategy_checks`` (``check_strategy``, the check dialogue, the runner),
``retriever_checks`` (``check_retriever``), ``parts`` (``hidden_parts``) and ``doubles``:
test doubles with hand-computable outputs, ``WordCounter`` (one token per word) and
``KeywordEmbedder`` (counts of a fixed vocabulary), imported from ``memlab.testing.doubles``.
"""

from __future__ import annotations

from .parts import hidden_parts
from .retriever_checks import check_retriever, retriever_records
from .strategy_checks import T0, check_records, check_strategy

__all__ = ["T0", "check_records", "check_retriever", "check_strategy", "hidden_parts", "retriever_records"]
