"""Clocks and forgetting curves: Ebbinghaus retention, exponential recency, time weighting.

Time is always passed in explicitly or read from an injectable ``Clock``, so a replay
is deterministic. All elapsed times are converted to the model's ``time_unit`` (seconds
per unit) and clamped at 0 (a record from the "future" is as fresh as can be).
"""

from __future__ import annotations

import math
import time
from abc import abstractmethod
from collections.abc import Iterable

import numpy as np

from .base import Component, ConfigError, Param
from .capabilities import Capabilities

GROWTH_MODES = ("add", "multiply")


class Clock(Component):
    """Where "now" comes from, in epoch seconds."""

    @abstractmethod
    def now(self) -> float: ...


class SystemClock(Clock):
    """The wall clock (``time.time()``)."""

    def now(self) -> float:
        return time.time()


class ManualClock(Clock):
    """A clock that moves only when told: ``set(t)`` or ``advance(seconds)``."""

    def __init__(self, start: float = 0.0):
        self.start = start
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        self._now = float(self.start)

    def now(self) -> float:
        return self._now

    def set(self, t: float) -> None:
        self._now = float(t)

    def advance(self, seconds: float) -> float:
        """Move forward by ``seconds``; returns the new time."""
        if seconds < 0:
            raise ConfigError(f"seconds must be >= 0 (a clock does not run backwards), got {seconds}")
        self._now += float(seconds)
        return self._now


class DecayModel(Component):
    """How much a memory still counts after some time.

    ``weight(now, last_recall, strength)`` = ``retention(t, strength)`` with
    t = max(0, now - last_recall) / time_unit. ``reinforce`` gives the strength after a
    recall, ``should_forget`` says whether garbage collection drops the memory.
    """

    time_unit: float

    def capabilities(self) -> Capabilities:
        """Stochastic when it draws whether to forget (``Ebbinghaus(stochastic=True)``)."""
        return Capabilities(stochastic=getattr(self, "stochastic", False) is True)

    def elapsed(self, now: float, last_recall: float) -> float:
        """t = max(0, now - last_recall) / time_unit."""
        return max(0.0, float(now) - float(last_recall)) / self.time_unit

    @abstractmethod
    def retention(self, t: float, strength: float = 1.0) -> float:
        """Weight in [0, 1] after ``t`` time units at ``strength``."""

    def weight(self, now: float, last_recall: float, strength: float = 1.0) -> float:
        return self.retention(self.elapsed(now, last_recall), strength)

    def initial(self) -> float:
        """Strength of a new memory."""
        return 1.0

    def reinforce(self, strength: float) -> float:
        """Strength after a recall (unchanged unless the model grows it)."""
        return strength

    def should_forget(self, t: float, strength: float) -> bool:
        """Whether a memory ``t`` time units after its last recall is forgotten (never, here)."""
        return False

    def forgets(self) -> bool:
        """False when ``should_forget`` is always False, so garbage collection can skip its
        scan of every memory at every search. A model that overrides ``should_forget``
        forgets unless it overrides this too."""
        return type(self).should_forget is not DecayModel.should_forget

    def recalled(self, strength: float, last_recall: float, now: float) -> tuple[float, float]:
        """(strength, last_recall) after a recall at ``now``: ``(reinforce(strength),
        max(last_recall, now))`` (a recall never moves the last one back)."""
        return self.reinforce(strength), max(float(last_recall), float(now))

    def forgotten(self, now: float, memories: Iterable[tuple[str, float, float]]) -> list[str]:
        """Ids among ``(id, last_recall, strength)`` that garbage collection drops at ``now``:
        ``should_forget(elapsed(now, last_recall), strength)``, examined in the order given
        (a stochastic model draws in that order); none, without a scan, when the model
        never forgets. The one forgetting rule of ``DecayRetriever`` and ``LongTermMemory``.
        """
        if not self.forgets():
            return []
        return [i for i, last, strength in memories
                if self.should_forget(self.elapsed(now, last), strength)]

    def reset(self) -> None:
        """Restart any random sequence."""


class Ebbinghaus(DecayModel):
    """MemoryBank's forgetting curve.

    Retention ``R = exp(-t / S)`` with ``t = (now - last_recall) / time_unit`` (days by
    default) and strength ``S``, which starts at ``initial_strength`` and grows on each
    recall: ``S + strength_growth`` (growth="add") or ``S * strength_growth``
    (growth="multiply"). A stronger memory fades more slowly. (MemoryBank's code writes
    ``exp(-t / 5*S)``, which Python reads as ``exp(-(t / 5) * S)`` so stronger memories
    fade faster; memlab computes ``exp(-t / S)``.)

    ``should_forget(t, S)``: deterministic, ``R < forget_threshold``; with
    ``stochastic=True``, forget with probability ``1 - R``: a draw ``u`` from a
    ``numpy.random.Generator`` seeded with ``seed`` forgets when ``u < 1 - R``. The draws
    form one deterministic sequence per seed; ``reset()`` (and any ``set_params``)
    re-seeds it.
    """

    constraints = {
        "time_unit": Param(float, gt=0, finite=True),
        "initial_strength": Param(float, gt=0, finite=True),
        "strength_growth": Param(float, finite=True),
        "growth": Param(choices=GROWTH_MODES),
        "forget_threshold": Param(float, ge=0, le=1),
        "stochastic": Param(bool),
        "seed": Param(int),
    }

    def __init__(self, time_unit: float = 86400.0, initial_strength: float = 1.0,
                 strength_growth: float = 1.0, growth: str = "add", forget_threshold: float = 0.05,
                 stochastic: bool = False, seed: int = 0):
        self.time_unit = time_unit
        self.initial_strength = initial_strength
        self.strength_growth = strength_growth
        self.growth = growth
        self.forget_threshold = forget_threshold
        self.stochastic = stochastic
        self.seed = seed
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        g = self.strength_growth  # its bound depends on growth: checked here, not in constraints
        if self.growth == "add" and g < 0:
            raise ConfigError(f"strength_growth must be >= 0 with growth='add', got {g}")
        if self.growth == "multiply" and g <= 0:
            raise ConfigError(f"strength_growth must be > 0 with growth='multiply', got {g}")
        self.reset()

    def reset(self) -> None:
        self._rng = np.random.default_rng(self.seed)

    def retention(self, t: float, strength: float = 1.0) -> float:
        """R = exp(-t / S)."""
        return math.exp(-t / strength)

    def initial(self) -> float:
        return float(self.initial_strength)

    def reinforce(self, strength: float) -> float:
        """S + strength_growth (growth="add") or S * strength_growth (growth="multiply")."""
        if self.growth == "add":
            return strength + self.strength_growth
        return strength * self.strength_growth

    def forgets(self) -> bool:
        """R = exp(-t / S) > 0, so R < 0 never holds: a zero threshold forgets nothing unless stochastic."""
        return self.stochastic or self.forget_threshold > 0

    def should_forget(self, t: float, strength: float) -> bool:
        r = self.retention(t, strength)
        if self.stochastic:
            return bool(self._rng.random() < 1.0 - r)
        return r < self.forget_threshold


class ExponentialRecency(DecayModel):
    """Generative Agents' recency: ``recency = decay ** t`` with t in hours by default.

    Recent memories score high (t = 0 gives 1.0) and older ones decay towards 0; the
    paper's released code sorts recency the other way round, which memlab does not.
    Strength plays no part; nothing is ever forgotten.
    """

    constraints = {
        "decay": Param(float, gt=0, le=1),
        "time_unit": Param(float, gt=0, finite=True),
    }

    def __init__(self, decay: float = 0.995, time_unit: float = 3600.0):
        self.decay = decay
        self.time_unit = time_unit
        self._on_params_changed()

    def retention(self, t: float, strength: float = 1.0) -> float:
        """decay ** t."""
        return float(self.decay) ** t

    def recency(self, hours: float) -> float:
        """decay ** hours (with the default time_unit of an hour)."""
        return self.retention(hours)


class TimeWeighting(DecayModel):
    """LangChain's TimeWeightedVectorStoreRetriever.

    ``score = (1 - decay_rate) ** hours_since_last_access + relevance``; retrieval
    refreshes the last access. ``retention(t) = (1 - decay_rate) ** t``; combine it with
    relevance by addition (``DecayRetriever(combine="add")``) to get LangChain's score.
    """

    constraints = {
        "decay_rate": Param(float, ge=0, lt=1),
        "time_unit": Param(float, gt=0, finite=True),
    }

    def __init__(self, decay_rate: float = 0.01, time_unit: float = 3600.0):
        self.decay_rate = decay_rate
        self.time_unit = time_unit
        self._on_params_changed()

    def retention(self, t: float, strength: float = 1.0) -> float:
        """(1 - decay_rate) ** t."""
        return (1.0 - float(self.decay_rate)) ** t

    def score(self, relevance: float, hours_since_last_access: float) -> float:
        """(1 - decay_rate) ** hours_since_last_access + relevance."""
        return self.retention(hours_since_last_access) + relevance
