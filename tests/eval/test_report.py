"""``memlab.eval.eval_report``: the record ``memlab eval --json`` prints, built by a library verb
that a notebook calls on its own replay."""

import json

from memlab.cli import main
from memlab.eval import eval_report, load_dataset, replay
from memlab.strategies import get

from .conftest import REPO

TRAVEL = REPO / "datasets" / "travel_advisor.json"


def test_the_verb_on_a_replay_equals_what_eval_json_prints(capsys):
    assert main(["eval", str(TRAVEL), "--strategy", "bm25", "--k", "3", "--budget", "256", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)

    dataset = load_dataset(str(TRAVEL))
    rows = replay(get("bm25"), dataset, ks=[1, 3], k_max=3, label="bm25", budgets=[256])
    record = eval_report(rows, dataset, strategy="bm25", k=3, budgets=[256], seconds=0.0, data=[str(TRAVEL)])

    assert json.loads(json.dumps(record)) == record  # JSON-ready as it is
    assert list(record) == list(printed)  # the same keys in the same order
    for got in (record, printed):  # what differs between two runs: the wall times, when and how it was run
        got.pop("seconds")
        got.pop("latency_ms")
        got["ci"].pop("latency_ms")
        for key in ("date", "command"):
            got["provenance"].pop(key)
    assert record == printed
    assert record["recall@3"] is not None and "recall@256tok" in record["ci"]


def test_the_text_of_a_record_is_what_eval_prints(capsys):
    from memlab.eval import report_text

    dataset = load_dataset(str(TRAVEL))
    rows = replay(get("bm25"), dataset, ks=[1, 3], k_max=3, label="bm25", budgets=[256])
    record = eval_report(rows, dataset, strategy="bm25", k=3, budgets=[256], seconds=0.0, data=[str(TRAVEL)])
    text = report_text(record, rows, 3)
    assert main(["eval", str(TRAVEL), "--strategy", "bm25", "--k", "3", "--budget", "256", "--quiet"]) == 0
    printed = capsys.readouterr().out
    timed = ("strategy ", "  latency_ms")  # the lines that carry wall times (the category table too)

    def means(out: str) -> list[str]:
        return [line for line in out.split("\n\n")[0].splitlines() if not line.startswith(timed)]

    assert means(text) == means(printed) and len(means(text)) > 10
    assert text.startswith("strategy bm25 on travel_advisor (1 dialogues") and "\ndataset report: " in text
