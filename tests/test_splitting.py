"""The split rules as pure functions: when an episode's members look like two threads, which
part keeps the id, and when a second answer confirms the first."""

from __future__ import annotations

import numpy as np

from tribalmemory.episodes.detector import DetectorContext
from tribalmemory.episodes.splitting import (
    MIN_PART,
    Proposal,
    confirms,
    split_proposal,
    two_means,
    wants_split_check,
)

DIM = 384


def cluster(
    name: str, count: int, axis: int, rng: np.random.Generator, shared: float = 0.0
) -> list[tuple[str, np.ndarray]]:
    """``count`` members near basis vector ``axis`` (plus ``shared`` times a direction every
    cluster shares), as (id, vector)."""
    base = np.zeros(DIM)
    base[axis] = 1.0
    common = np.zeros(DIM)
    common[DIM - 1] = shared
    return [(f"{name}{i}", base + common + rng.normal(0.0, 0.03, DIM)) for i in range(count)]


def interleave(*parts: list[tuple[str, np.ndarray]]) -> list[tuple[str, np.ndarray]]:
    """Members of several threads in the order they would arrive: one of each in turn."""
    out = []
    for group in zip(*parts, strict=False):
        out.extend(group)
    longest = max(len(p) for p in parts)
    for part in parts:
        out.extend(part[min(len(p) for p in parts) : longest])
    return out


def test_two_threads_in_one_episode_are_proposed_the_larger_keeping_the_id() -> None:
    rng = np.random.default_rng(0)
    auth, db = cluster("auth", 4, 0, rng), cluster("db", 6, 1, rng)
    proposal = split_proposal(interleave(auth, db), DetectorContext())
    assert proposal is not None
    assert set(proposal.keep) == {m for m, _ in db}
    assert set(proposal.move) == {m for m, _ in auth}
    assert abs(proposal.cross) < 0.05  # orthogonal threads
    # each member carries noise of norm 0.03 * sqrt(384) = 0.59: expected cosine within a
    # thread 1 / (1 + 0.35) = 0.74
    assert 0.70 < proposal.tightness < 0.78


def test_one_thread_is_not_proposed() -> None:
    rng = np.random.default_rng(1)
    assert split_proposal(cluster("m", 16, 0, rng), DetectorContext()) is None


def test_a_part_with_fewer_than_min_part_members_is_strays_not_a_thread() -> None:
    rng = np.random.default_rng(2)
    members = interleave(cluster("db", 9, 1, rng), cluster("auth", MIN_PART - 1, 0, rng))
    assert split_proposal(members, DetectorContext()) is None


def test_an_episode_too_small_for_two_parts_is_not_looked_at() -> None:
    rng = np.random.default_rng(3)
    members = interleave(cluster("db", MIN_PART, 1, rng), cluster("auth", MIN_PART - 1, 0, rng))
    assert len(members) == 2 * MIN_PART - 1
    assert split_proposal(members, DetectorContext()) is None


def test_the_bounds_move_with_the_streams_own_similarities() -> None:
    """Two groups at cosine about 0.43 of each other: two threads in a stream whose pairs
    compared score 0.55 on average, one thread in a stream where they score 0.15."""
    rng = np.random.default_rng(4)
    members = interleave(cluster("a", 5, 0, rng, shared=1.0), cluster("b", 5, 1, rng, shared=1.0))
    alike = DetectorContext(cos_count=100.0, cos_mean=0.55, cos_m2=100.0 * 0.1**2)
    unlike = DetectorContext(cos_count=100.0, cos_mean=0.15, cos_m2=100.0 * 0.1**2)
    proposal = split_proposal(members, alike)
    # shared direction 1, own axis 1, noise 0.35 in squared norm: cross 1 / 2.35 = 0.43
    assert proposal is not None and 0.40 < proposal.cross < 0.46
    assert split_proposal(members, unlike) is None


def test_parts_of_equal_size_keep_the_id_with_the_oldest_member() -> None:
    rng = np.random.default_rng(5)
    auth, db = cluster("auth", 4, 0, rng), cluster("db", 4, 1, rng)
    proposal = split_proposal(db + auth, DetectorContext())  # the database thread came first
    assert proposal is not None
    assert proposal.keep == tuple(m for m, _ in db)
    assert proposal.move == tuple(m for m, _ in auth)


def test_two_means_is_deterministic_and_labels_every_member() -> None:
    rng = np.random.default_rng(6)
    vectors = np.stack([v for _, v in interleave(cluster("a", 5, 0, rng), cluster("b", 7, 2, rng))])
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    first, second = two_means(vectors), two_means(vectors.copy())
    assert first.tolist() == second.tolist()
    assert sorted(np.bincount(first).tolist()) == [5, 7]


def test_a_second_answer_confirms_only_a_proposal_about_the_same_parts() -> None:
    proposal = Proposal(("d1", "d2", "d3", "d4", "d5"), ("a1", "a2", "a3", "a4"), 0.0, 0.8)
    assert not confirms(None, proposal)  # no first answer yet
    assert not confirms([], proposal)
    assert confirms(["a1", "a2", "a3", "a4"], proposal)
    assert confirms(["a1", "a2", "a3"], proposal)  # the part grew since
    assert confirms(["d1", "d2", "d3"], proposal)  # the parts swapped sizes meanwhile
    assert not confirms(["a1", "d1"], proposal)  # half on each side: other parts
    assert not confirms(["x1", "x2", "a1"], proposal)  # moved already (a split before a crash)


def test_checks_come_at_8_16_32_and_64_members() -> None:
    assert [n for n in range(1, 100) if wants_split_check(n - 1, n)] == [8, 16, 32, 64]
    assert wants_split_check(7, 9)  # a jump over a size counts
    assert not wants_split_check(8, 8)
