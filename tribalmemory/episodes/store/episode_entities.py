"""The entities episodes' memories name: a read joining ``memberships`` and ``mentions``."""

from __future__ import annotations

import json

from .table import Table

Named = tuple[str, str, int, bool]
"""An entity an episode's memories name: (name, kind, mentions, doubted)."""


class EpisodeEntities(Table):
    """Reads of the entities of episodes (written by :class:`~.entities.Entities`)."""

    def of_episodes(self, episode_ids: list[str]) -> dict[str, list[Named]]:
        """The entities each of ``episode_ids`` names, most mentioned first, ties by name, in
        one query for them all (an episode naming none has an empty list)."""
        found: dict[str, list[Named]] = {episode_id: [] for episode_id in episode_ids}
        if not episode_ids:
            return found
        rows = self.db.execute(
            "SELECT b.episode_id, m.name, e.kind, COUNT(*) AS n, e.doubted FROM memberships b "
            "JOIN mentions m ON m.memory_id = b.memory_id "
            "JOIN entities e ON e.project = m.project AND e.name = m.name "
            "WHERE b.episode_id IN (SELECT value FROM json_each(?)) "
            "GROUP BY b.episode_id, m.name ORDER BY b.episode_id, n DESC, m.name",
            (json.dumps(episode_ids),),
        )
        for episode_id, name, kind, count, doubted in rows:
            found[episode_id].append((name, kind, count, bool(doubted)))
        return found
