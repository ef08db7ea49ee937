"""Entities: the list of a project's entities, one entity, an episode's entities."""

from __future__ import annotations

from pydantic import Field

from .base import Request, Response
from .fields import PROJECT_DOC, MemoryId, ProjectName, Timestamp
from .limits import (
    ENTITIES_LIMIT,
    ENTITY_MEMORIES_LIMIT,
    MAX_ENTITY_CHARS,
    MAX_FILTER_CHARS,
    EntityKind,
    bounded,
)

ENTITY_NAME_DOC = (
    "An entity's name or any alias, in any spelling ('orders-svc', 'Orders Service' and "
    "'orders_service' are one entity)."
)

# -- requests ----------------------------------------------------------------------------------


class EntitiesListQuery(Request):
    query: str | None = Field(
        None,
        max_length=MAX_FILTER_CHARS,
        description="Only entities whose name or an alias contains this (compared in "
        "canonical form: lower case, separators as '-', svc as service).",
    )
    kind: EntityKind | None = Field(None, description="Only entities of this kind.")
    include_doubted: bool = Field(
        False,
        description="Also the doubted entities: those no mention vouches for (the extraction "
        "was unsure of every mention, or an LLM's final summary read them without listing "
        "the name; see docs/entities.md).",
    )
    limit: int = bounded(ENTITIES_LIMIT, "Maximum number of entities.")
    project: ProjectName | None = Field(None, description=PROJECT_DOC)


class EntityRef(Request):
    name: str = Field(min_length=1, max_length=MAX_ENTITY_CHARS, description=ENTITY_NAME_DOC)


class EntityGetQuery(Request):
    limit: int = bounded(ENTITY_MEMORIES_LIMIT, "Maximum number of its latest memories.")
    project: ProjectName | None = Field(None, description=PROJECT_DOC)


# -- responses ---------------------------------------------------------------------------------


class Entity(Response):
    """An entity as listed: its canonical name, kind, aliases and when it was named."""

    name: str = Field(description="The canonical name (entities.canonical).")
    kind: str = Field(
        description="url, ticket, version, path, identifier, system or name; written when no "
        "entity is stored under the name asked for and the answer is the memories that write "
        "it word for word (GET /v1/entities/{name} only)."
    )
    aliases: list[str] = Field(description="The spellings seen in its memories.")
    first_seen_at: Timestamp = Field(description="Memory time of its first mention.")
    last_seen_at: Timestamp = Field(description="Memory time of its latest mention.")
    mentions: int = Field(description="How many memories name it.")
    doubted: bool = Field(
        description="No mention vouches for it (the extraction was unsure of each, or an "
        "LLM's final summary read them without listing the name): left out of the list "
        "unless include_doubted."
    )


class EntityList(Response):
    entities: list[Entity]
    count: int
    project: str


class EntityEpisode(Response):
    """An episode whose memories name the entity."""

    episode_id: str
    title: str
    first_mention_at: Timestamp
    last_mention_at: Timestamp
    mentions: int = Field(description="How many of its memories name the entity.")


class EntityMemory(Response):
    memory_id: MemoryId
    content: str
    created_at: Timestamp
    episode_id: str | None


class CoEntity(Response):
    name: str
    mentions: int = Field(description="How many memories name both.")


class EntityDetail(Response):
    entity: Entity
    also_written_as: list[str] = Field(
        description="The other entities the name asked for names, counted in its episodes, "
        "memories and co-occurring entities: those written so (an alias), and its parts and "
        "initials that name a thing on their own (tagus of Norvane Tagus, hvh of Harrow Vale "
        "Hospital)."
    )
    project: str
    episodes: list[EntityEpisode] = Field(description="Newest mention first.")
    memories: list[EntityMemory] = Field(description="Its latest memories, newest first.")
    memory_count: int = Field(
        description="How many memories name it or a name it is also written as, each once: "
        "the memories listed are the latest of them."
    )
    co_occurring: list[CoEntity] = Field(description="The entities most often named with it.")


class EpisodeEntity(Response):
    """An entity an episode's memories name."""

    name: str
    kind: str
    mentions: int = Field(description="How many of the episode's memories name it.")
    doubted: bool = Field(
        description="No mention vouches for it (see Entity.doubted); listed here all the same."
    )
