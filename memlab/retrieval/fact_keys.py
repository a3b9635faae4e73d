"""Fact-augmented keys: each record is indexed under its text plus the facts an ``Extractor``
draws from it (LongMemEval's key expansion, K = V + facts; the record itself is returned
unchanged).

The extractor is the choice of cost: ``RuleBasedExtractor`` (offline, by rule, nothing per
call) or ``LLMExtractor`` over a model (one call per record added, counted in its ``usage``
and so in a strategy's ``llm_usage``). A record is shown to the extractor alone, as it is
observed: its keys never read a turn that comes after it.
"""

from __future__ import annotations

from ..base import Param
from ..extraction.base import Extractor
from ..records import MemoryRecord
from .base import RekeyedRetriever, Retriever


class FactKeyRetriever(RekeyedRetriever):
    """Indexes each record under its content and the contents of the memories ``extractor``
    finds in it (at most ``max_facts``, in the extractor's order), the facts ``weight`` times:

        facts      = [m.content for m in extractor.extract([record])][:max_facts]
        index text = content + ("\\n" + "\\n".join(facts)) * weight     (content alone when none)

    Search returns the records themselves; ``facts(id)`` is what was extracted for a record.
    Cost: one ``extract`` call per record when it is added (the extractor's ``usage``; a
    change of any parameter re-indexes every record and asks again); nothing per query.
    """

    name = "fact_keys"

    constraints = {"retriever": Param(Retriever), "extractor": Param(Extractor), "weight": Param(int, ge=0),
                   "max_facts": Param(int, ge=1)}

    def __init__(self, retriever: Retriever, extractor: Extractor, weight: int = 1, max_facts: int = 3):
        super().__init__()
        self.retriever = retriever
        self.extractor = extractor
        self.weight = weight
        self.max_facts = max_facts
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        # a change of any setting (the extractor's own among them) asks the extractor anew
        self._facts: dict[str, list[str]] = {}
        self._rekey()

    def facts(self, id: str) -> list[str]:
        """What the extractor found in record ``id`` (before the cut to ``max_facts``)."""
        return list(self._facts.get(id, []))

    def _extract(self, record: MemoryRecord) -> list[str]:
        found = self._facts.get(record.id)
        if found is None:
            found = [m.content.strip() for m in self.extractor.extract([record]) if m.content.strip()]
            self._facts[record.id] = found
        return found

    def key_text(self, record: MemoryRecord) -> str:
        """The text ``record`` is indexed under."""
        facts = self._extract(record)[:self.max_facts]
        if not facts or not self.weight:
            return record.content
        return record.content + ("\n" + "\n".join(facts)) * self.weight

    def _remove(self, ids: list[str]) -> None:
        self.retriever.remove(ids)
        for i in ids:
            self._facts.pop(i, None)

    def _clear(self) -> None:
        self.retriever.reset()
        self._facts = {}
