"""The oracle reads its gold records through an index: the same records as scanning everything."""

from memlab.records import MemoryRecord
from memlab.strategies.reference import OracleStrategy
from memlab.tokens import ApproxTokenCounter


class Probe:
    def __init__(self, evidence):
        self.evidence = evidence


def test_gold_records_equal_a_full_scan():
    oracle = OracleStrategy(token_counter=ApproxTokenCounter())
    records = [MemoryRecord("user", f"turn {i}", id=f"t{i}", timestamp=float(i)) for i in range(8)]
    records.append(MemoryRecord("assistant", "summary", id="sum", timestamp=9.0,
                                metadata={"source_ids": ["t1", "t6"]}))
    for r in records:
        oracle.observe(r)
    for gold in (["t6"], ["t1", "t3"], ["sum"], ["nope"], [], ["t6", "t1", "t7"]):
        oracle.see_probe(Probe(gold))
        scan = [r.id for r in records if r.id in set(gold) or set(r.source_ids) & set(gold)]
        assert [h.id for h in oracle.retrieve("q", 20)] == scan
        assert oracle.build_context("q").record_ids == scan
    assert [h.id for h in oracle.retrieve("q", 2)] == ["t1", "t6"]
