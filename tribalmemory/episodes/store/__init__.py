"""Episode state in SQLite beside the memory store: the only package with SQL.

``database`` owns the connection, the schema (``schema``) and the transactions, and the changes
that span tables; each table has a small class of its own (``episodes``, ``memberships``,
``detections``, ``jobs``, ``history``, ``pins``, ``sessions``, ``conversations``, ``terms``,
``entities``; ``episode_entities``: the entities of episodes, a read joining two tables)
that runs its statements on the connection the caller's transaction holds. ``rows``: the
typed rows returned.
"""

from .database import BACKSTOP_CHECKPOINT_PAGES, EpisodeStore
from .rows import EpisodeRow, Job, new_episode_id

__all__ = ["BACKSTOP_CHECKPOINT_PAGES", "EpisodeRow", "EpisodeStore", "Job", "new_episode_id"]
