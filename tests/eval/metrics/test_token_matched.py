"""Token-matched metrics: recomputed independently from the rows the CLI saves."""

from __future__ import annotations

import json

from memlab import strategies
from memlab.cli import main
from memlab.eval.replay import replay
from memlab.eval.results import load_results
from memlab.tokens import ApproxTokenCounter, load_encoding


def _recompute(rows, budget):
    """Recall, hit rate and tokens under ``budget``, written from the definition alone."""
    recalls, hits, used = [], [], []
    for sources, tokens, gold in zip(rows["retrieved_source_ids"], rows["retrieved_tokens"], rows["gold"]):
        total, kept = 0, []
        for ids, t in zip(sources, tokens):
            if total + t > budget:
                break
            total += t
            kept.extend(ids)
        used.append(total)
        if gold:
            covered = set(kept) & set(gold)
            recalls.append(len(covered) / len(set(gold)))
            hits.append(1.0 if covered else 0.0)
    return sum(recalls) / len(recalls), sum(hits) / len(hits), sum(used) / len(used)


def test_cli_budget_metrics_match_an_independent_recomputation(tiny_file, tmp_path, capsys):
    out = tmp_path / "rows.parquet"
    assert main(["eval", str(tiny_file), "--strategy", "bm25", "--budget", "15", "--budget", "30",
                 "--json", "--quiet", "--output", str(out)]) == 0
    result = json.loads(capsys.readouterr().out)
    rows = load_results(str(out))
    for budget in (15, 30):
        recall, hit, tokens = _recompute(rows, budget)
        assert result[f"recall@{budget}tok"] == recall
        assert result[f"hit_rate@{budget}tok"] == hit
        assert result[f"tokens@{budget}tok"] == tokens
    assert result["tokens@15tok"] < result["tokens@30tok"] <= 30


def test_hit_tokens_are_the_hit_as_a_chat_message_in_tiktoken(tiny):
    rows = replay(strategies.get("bm25"), tiny, ks=(1,))
    enc = load_encoding("o200k_base")  # tiktoken's encoding, read from memlab's offline copy
    turns = {t.id: t for d in tiny.dialogues for t in d.turns() if d.id == "coffee"}
    first = rows.iloc[1]                                         # p_end in dialogue "coffee"
    for turn_id, tokens in zip(first["retrieved_ids"], first["retrieved_tokens"]):
        record = turns[turn_id].to_record("coffee").to_openai()
        assert tokens == 3 + len(enc.encode(record["role"])) + len(enc.encode(record["content"]))


def test_the_strategy_token_counter_is_used(tiny):
    approx = replay(strategies.get("bm25", token_counter=ApproxTokenCounter(chars_per_token=1.0)), tiny, ks=(1,))
    # one token per character: 3 framing + len("user") + len(text)
    assert approx.loc[0, "retrieved_tokens"] == [3 + 4 + len("I drink espresso every morning.")]


def test_budgets_deepen_the_list_until_it_overflows(tiny):
    shallow = replay(strategies.get("bm25"), tiny, ks=(1,), k_max=1)
    deep = replay(strategies.get("bm25"), tiny, ks=(1,), k_max=1, budgets=[10_000])
    assert shallow["retrieved_ids"].map(len).max() == 1
    # every turn observed fits in 10k tokens, so the list holds every turn the retriever matches
    assert deep["retrieved_ids"].map(len).max() > 1
    assert (deep["recall@1"].fillna(-1) == shallow["recall@1"].fillna(-1)).all()
    assert (deep["tokens@10000tok"] == deep["retrieved_tokens"].map(sum)).all()


def test_eval_prints_the_dataset_report(tiny_file, capsys):
    assert main(["eval", str(tiny_file), "--json", "--quiet"]) == 0
    report = json.loads(capsys.readouterr().out)["dataset_report"]
    assert report == {"summary": "nothing fixed or dropped", "counts": {}}
    assert main(["eval", str(tiny_file), "--quiet"]) == 0
    assert "dataset report: nothing fixed or dropped" in capsys.readouterr().out


def test_progress_bar_on_stderr_only_when_asked_or_a_terminal(tiny_file, capsys):
    assert main(["eval", str(tiny_file), "--json", "--progress"]) == 0
    captured = capsys.readouterr()
    assert "bm25:" in captured.err and "/4 [" in captured.err and "probe/s" in captured.err and json.loads(captured.out)["n_probes"] == 4
    assert main(["eval", str(tiny_file), "--json"]) == 0          # stderr is not a terminal here
    assert capsys.readouterr().err == ""
    assert main(["eval", str(tiny_file), "--json", "--quiet"]) == 0
    assert capsys.readouterr().err == ""


def test_layered_hits_cost_their_line_of_the_memory_message(tiny):
    import datetime as dt

    strategy = strategies.get("layered")
    dialogue = tiny.dialogues[0]
    for record in dialogue.to_records():
        strategy.observe(record)
    hits = strategy.retrieve("What is the cat called?", 10, now=dialogue.probe_time(dialogue.probes[1]))
    assert hits
    enc = load_encoding("o200k_base")
    expected = []
    for h in hits:   # the line Load writes: "- [YYYY-MM-DD] content", plus its line break
        day = dt.datetime.fromtimestamp(h.record.timestamp, dt.timezone.utc).date().isoformat()
        expected.append(len(enc.encode(f"- [{day}] {' '.join(h.record.content.split())}\n")))
    assert strategy.hit_tokens(hits) == expected
    rows = replay(strategies.get("layered"), tiny, ks=(1,), budgets=[10_000])
    assert all(len(t) == len(s) for t, s in zip(rows["retrieved_tokens"], rows["retrieved_source_ids"]))
