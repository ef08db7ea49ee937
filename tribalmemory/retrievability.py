"""Retrievability of a memory or an episode: FSRS-style stability, difficulty and forgetting.

Pure functions, no I/O. Times are in days. The forgetting curve is the FSRS power curve
``R(t, S) = (1 + FACTOR · t / S) ** DECAY``: ``R(S, S) = 0.9`` (stability is the time after
which recall probability has fallen to 90 %). Each access is a *review*:

- a recall that returns the item is a light review (:data:`ACCESS`, FSRS grade "hard");
- an explicit "used" signal is a good review (:data:`USED`, FSRS grade "good"). "Used" soon
  after the recall that returned the item (within :data:`USE_WINDOW_DAYS`) *upgrades* that
  recall's review instead of counting twice: a recall then use is one good review.

A successful review grows stability the more, the lower R was at that moment (FSRS), and by
:data:`KEY_MOMENT_BONUS` more for a key moment (a surprising member of an episode).
Weights are FSRS-4.5's published defaults.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

DECAY = -0.5
FACTOR = 19 / 81  # so that R(S, S) = 0.9

ACCESS = 2  # FSRS grade "hard": the item was shown
USED = 3  # FSRS grade "good": the item was shown and used
GRADES = (ACCESS, USED)

W = (0.4872, 1.4003, 3.7145, 13.8206, 5.1618, 1.2298, 0.8975, 0.031, 1.6474, 0.1367, 1.0461)
HARD_PENALTY = 0.2272  # FSRS w15: growth multiplier of a "hard" review
KEY_MOMENT_BONUS = 1.5  # growth multiplier for a key-moment (surprising) memory
INITIAL_STABILITY = W[2]  # days: a new item counts as learnt once, graded "good"
INITIAL_DIFFICULTY = W[4]  # FSRS D0(good) = w4
MIN_STABILITY = 0.01  # days
MAX_STABILITY = 36500.0  # days (100 years)
MIN_DIFFICULTY = 1.0
MAX_DIFFICULTY = 10.0
USE_WINDOW_DAYS = 1.0  # "used" within this time of the last recall upgrades that recall
DAY_SECONDS = 86400.0


def clamp(value: float, low: float, high: float) -> float:
    return max(low, min(high, value))


def retrievability(elapsed_days: float, stability: float) -> float:
    """Probability of recall after ``elapsed_days`` at ``stability`` (both clamped: negative
    time, from a clock set back, counts as 0)."""
    t = max(0.0, elapsed_days)
    s = clamp(stability, MIN_STABILITY, MAX_STABILITY)
    return (1.0 + FACTOR * t / s) ** DECAY


def next_difficulty(difficulty: float, grade: int) -> float:
    """FSRS difficulty after a review: harder after "hard", with mean reversion to D0."""
    moved = difficulty - W[6] * (grade - 3)
    return clamp(W[7] * INITIAL_DIFFICULTY + (1 - W[7]) * moved, MIN_DIFFICULTY, MAX_DIFFICULTY)


def next_stability(
    stability: float, difficulty: float, recall: float, grade: int, key_moment: bool
) -> float:
    """FSRS stability after a successful review at retrievability ``recall``:
    ``S · (1 + e^w8 · (11 − D) · S^−w9 · (e^(w10·(1−R)) − 1) · penalty · bonus)``."""
    s = clamp(stability, MIN_STABILITY, MAX_STABILITY)
    d = clamp(difficulty, MIN_DIFFICULTY, MAX_DIFFICULTY)
    r = clamp(recall, 0.0, 1.0)
    growth = math.exp(W[8]) * (11 - d) * s ** -W[9] * (math.exp(W[10] * (1 - r)) - 1)
    growth *= HARD_PENALTY if grade == ACCESS else 1.0
    growth *= KEY_MOMENT_BONUS if key_moment else 1.0
    return clamp(s * (1 + growth), MIN_STABILITY, MAX_STABILITY)


@dataclass(frozen=True)
class Stats:
    """The access statistics of one memory or episode. Times are epoch seconds.

    ``reviewed_at`` is the time of the last review (None: never reviewed, the item counts
    from its creation with :data:`INITIAL_STABILITY`). ``base_*`` is the state before that
    review, kept so that "used" can upgrade it; ``last_grade`` is its grade.
    """

    access_count: int = 0
    use_count: int = 0
    last_accessed_at: float | None = None
    stability: float = INITIAL_STABILITY
    difficulty: float = INITIAL_DIFFICULTY
    reviewed_at: float | None = None
    base_stability: float = INITIAL_STABILITY
    base_difficulty: float = INITIAL_DIFFICULTY
    base_reviewed_at: float | None = None
    last_grade: int | None = None

    def retrievability(self, now: float, created_at: float) -> float:
        """R now, counting from the last review, or from ``created_at`` if none."""
        since = self.reviewed_at if self.reviewed_at is not None else created_at
        return retrievability((now - since) / DAY_SECONDS, self.stability)


def _reviewed(
    stability: float,
    difficulty: float,
    since: float,
    now: float,
    grade: int,
    key_moment: bool,
) -> tuple[float, float]:
    recall = retrievability((now - since) / DAY_SECONDS, stability)
    grown = next_stability(stability, difficulty, recall, grade, key_moment)
    return grown, next_difficulty(difficulty, grade)


def review(stats: Stats, grade: int, now: float, created_at: float, key_moment: bool) -> Stats:
    """The statistics after an access (``ACCESS``) or a use (``USED``) at ``now``."""
    if grade not in GRADES:
        raise ValueError(f"grade must be one of {GRADES}, got {grade!r}")
    upgrade = (
        grade == USED
        and stats.last_grade == ACCESS
        and stats.reviewed_at is not None
        and 0 <= now - stats.reviewed_at <= USE_WINDOW_DAYS * DAY_SECONDS
    )
    if upgrade:  # the recall that showed it was a use: redo that review as "good"
        assert stats.reviewed_at is not None
        since = stats.base_reviewed_at if stats.base_reviewed_at is not None else created_at
        stability, difficulty = _reviewed(
            stats.base_stability, stats.base_difficulty, since, stats.reviewed_at, USED, key_moment
        )
        return replace(
            stats,
            use_count=stats.use_count + 1,
            last_accessed_at=now,
            stability=stability,
            difficulty=difficulty,
            last_grade=USED,
        )
    since = stats.reviewed_at if stats.reviewed_at is not None else created_at
    stability, difficulty = _reviewed(
        stats.stability, stats.difficulty, since, now, grade, key_moment
    )
    return Stats(
        access_count=stats.access_count + 1,
        use_count=stats.use_count + (1 if grade == USED else 0),
        last_accessed_at=now,
        stability=stability,
        difficulty=difficulty,
        reviewed_at=now,
        base_stability=stats.stability,
        base_difficulty=stats.difficulty,
        base_reviewed_at=stats.reviewed_at,
        last_grade=grade,
    )


def rerank_factor(recall: float, floor: float) -> float:
    """The multiplier of relevance under ``recall.rerank: retrievability``:
    ``floor + (1 − floor) · R``, so a forgotten item keeps ``floor`` of its relevance."""
    return floor + (1.0 - floor) * clamp(recall, 0.0, 1.0)
