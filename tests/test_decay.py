"""Clocks and forgetting curves, with hand-computed values."""

import math

import numpy as np
import pytest

from memlab.base import ConfigError
from memlab.decay import (
    Ebbinghaus,
    ExponentialRecency,
    ManualClock,
    SystemClock,
    TimeWeighting,
)

DAY = 86400.0


def test_manual_clock():
    c = ManualClock(start=100.0)
    assert c.now() == 100.0
    assert c.advance(50) == 150.0
    c.set(10.0)
    assert c.now() == 10.0
    with pytest.raises(ConfigError, match="seconds must be >= 0"):
        c.advance(-1)
    assert c.clone().now() == 100.0


def test_system_clock_reads_wall_time():
    assert SystemClock().now() > 1.6e9


def test_ebbinghaus_retention_exact():
    e = Ebbinghaus()
    assert e.retention(1.0, 1.0) == math.exp(-1.0) == pytest.approx(0.36787944117144233, abs=1e-15)
    assert e.retention(1.0, 2.0) == pytest.approx(0.6065306597126334, abs=1e-15)  # exp(-1/2)
    assert e.weight(now=2 * DAY, last_recall=0.0, strength=2.0) == pytest.approx(math.exp(-1.0))
    assert e.weight(now=0.0, last_recall=5 * DAY) == 1.0  # future records clamp to t = 0


def test_stronger_memories_fade_slower_unlike_memorybanks_precedence_bug():
    e = Ebbinghaus()
    t, s = 5.0, 5.0
    assert e.retention(t, s) == pytest.approx(math.exp(-1.0))
    buggy = math.exp(-t / 5 * s)  # what MemoryBank's code computes: exp(-(t/5) * S)
    assert buggy == pytest.approx(math.exp(-5.0))
    assert e.retention(1.0, 3.0) > e.retention(1.0, 2.0) > e.retention(1.0, 1.0)


def test_reinforce_add_and_multiply():
    assert Ebbinghaus().reinforce(1.0) == 2.0
    assert Ebbinghaus(strength_growth=0.5).reinforce(2.0) == 2.5
    assert Ebbinghaus(growth="multiply", strength_growth=1.5).reinforce(2.0) == 3.0
    assert Ebbinghaus(initial_strength=3.0).initial() == 3.0


def test_deterministic_forgetting_threshold():
    e = Ebbinghaus(forget_threshold=0.05)
    assert math.exp(-3.0) < 0.05 < math.exp(-2.99)
    assert e.should_forget(3.0, 1.0) is True
    assert e.should_forget(2.99, 1.0) is False
    assert e.should_forget(3.0, 2.0) is False  # stronger: exp(-1.5)
    assert Ebbinghaus(forget_threshold=0.0).should_forget(1e6, 1.0) is False


def test_stochastic_forgetting_follows_seeded_draws():
    e = Ebbinghaus(stochastic=True, seed=7)
    t = math.log(2.0)  # R = 0.5
    got = [e.should_forget(t, 1.0) for _ in range(20)]
    draws = np.random.default_rng(7).random(20)
    assert got == [bool(u < 0.5) for u in draws]
    e.reset()
    assert [e.should_forget(t, 1.0) for _ in range(20)] == got
    assert Ebbinghaus(stochastic=True, seed=8).should_forget(t, 1.0) == bool(
        np.random.default_rng(8).random() < 0.5)


def test_stochastic_extremes():
    e = Ebbinghaus(stochastic=True)
    assert not any(e.should_forget(0.0, 1.0) for _ in range(50))  # R = 1: never
    assert all(e.should_forget(1e4, 1.0) for _ in range(50))  # R ~ 0: always


def test_exponential_recency_recent_is_high():
    r = ExponentialRecency()
    assert r.recency(0.0) == 1.0
    assert r.recency(2.0) == pytest.approx(0.990025, abs=1e-15)  # 0.995 ** 2
    assert r.weight(now=7200.0, last_recall=0.0) == pytest.approx(0.990025, abs=1e-15)
    newer, older = r.weight(7200.0, 3600.0), r.weight(7200.0, 0.0)
    assert newer == pytest.approx(0.995) and newer > older
    assert r.should_forget(1e9, 1.0) is False and r.reinforce(1.0) == 1.0


def test_time_weighting_langchain_score():
    tw = TimeWeighting()
    assert tw.score(0.5, 10.0) == pytest.approx(0.99 ** 10 + 0.5, abs=1e-15)
    assert tw.score(0.5, 10.0) == pytest.approx(1.4043820750088044, abs=1e-12)
    assert tw.weight(now=3600.0 * 3, last_recall=0.0) == pytest.approx(0.970299, abs=1e-12)


def test_validation_messages():
    with pytest.raises(ConfigError, match=r"^Ebbinghaus parameter 'forget_threshold': expected a number >= 0 and "
                                          r"<= 1, got 1.5$"):
        Ebbinghaus(forget_threshold=1.5)
    with pytest.raises(ConfigError, match=r"^Ebbinghaus parameter 'growth': expected one of 'add', 'multiply', "
                                          r"got 'square'$"):
        Ebbinghaus(growth="square")
    with pytest.raises(ConfigError, match=r"^Ebbinghaus parameter 'time_unit': expected a finite number > 0, got 0$"):
        Ebbinghaus(time_unit=0)
    with pytest.raises(ConfigError, match=r"^Ebbinghaus parameter 'time_unit': expected a finite number > 0, "
                                          r"got inf$"):
        Ebbinghaus(time_unit=float("inf"))
    with pytest.raises(ConfigError, match=r"strength_growth must be > 0 with growth='multiply', got 0"):
        Ebbinghaus(growth="multiply", strength_growth=0)
    with pytest.raises(ConfigError, match=r"^ExponentialRecency parameter 'decay': expected a number > 0 and <= 1, "
                                          r"got 1.5$"):
        ExponentialRecency(decay=1.5)
    with pytest.raises(ConfigError, match=r"^TimeWeighting parameter 'decay_rate': expected a number >= 0 and < 1, "
                                          r"got 1$"):
        TimeWeighting(decay_rate=1)


def test_set_params_reseeds():
    e = Ebbinghaus(stochastic=True, seed=1)
    first = [e.should_forget(0.7, 1.0) for _ in range(10)]
    e.set_params(seed=1)
    assert [e.should_forget(0.7, 1.0) for _ in range(10)] == first


def test_recalled_and_forgotten_are_the_one_rule_for_every_memory():
    model = Ebbinghaus(strength_growth=2.0, forget_threshold=0.05)
    # S = 1 + 2 = 3; a recall never moves the last one back
    assert model.recalled(1.0, 100.0, 50.0) == (3.0, 100.0)
    assert model.recalled(1.0, 100.0, 150.0) == (3.0, 150.0)
    day = 86400.0
    # exp(-t / S) < 0.05  <=>  t > S ln 20 = 2.9957 S days
    memories = [("a", 0.0, 1.0), ("b", 0.0, 2.0), ("c", 2 * day, 1.0)]
    assert model.forgotten(3 * day, memories) == ["a"]
    assert model.forgotten(5.9 * day, memories) == ["a", "c"]  # b: 5.9 < 5.9915
    assert model.forgotten(6.0 * day, [("b", 0.0, 2.0)]) == ["b"]  # 6 > 5.9915
    never = Ebbinghaus(forget_threshold=0.0)

    def boom():
        raise AssertionError("a model that never forgets must not scan")
        yield

    assert never.forgotten(1e12, boom()) == []
