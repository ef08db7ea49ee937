"""Safety rule of reconcile(): summaries a blank episode database cannot account for stay.

reconcile() deletes episode summary memories that no episode names (orphans of a crash). When
the episode database holds nothing at all — no episode, membership, detection, job or state —
but the store holds summary memories, the database was lost, truncated or replaced, and those
summaries are not orphans: deleting them would destroy the only trace of the episodes. Start-up
stops instead (``tribalmemory doctor`` repairs it).
"""

from __future__ import annotations

from ..storage.integrity import DamagedDataError


def refuse_unaccounted_summaries(blank: bool, path: object, summaries: int) -> None:
    """Raise DamagedDataError if ``summaries`` summary memories would be deleted as orphans
    while the episode database at ``path`` is ``blank``."""
    if summaries and blank:
        raise DamagedDataError(
            str(path),
            f"holds no episode at all, but the store holds {summaries} episode summary, "
            "lesson and decision memories: the episode database was lost, truncated or "
            "replaced, so they are not orphans and were not deleted",
        )
