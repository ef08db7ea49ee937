"""The storage protocols are complete: every backend class implements the ones it claims,
method by method (names, kinds and defaults of the parameters), every public method of a
backend is declared by one of them, and the optional parts are found with ``isinstance``.

Callers type against these protocols (``storage/reembed.py``, ``service/maintenance.py``,
``portability/backup.py``); a method a backend has but no protocol declares could only be
reached by duck typing.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from pathlib import Path
from typing import Any

import pytest

import tribalmemory.storage as storage
from tribalmemory.embeddings.embedder import BUNDLED_DIM, BUNDLED_MODEL
from tribalmemory.service.maintenance import StoreMaintenance
from tribalmemory.storage.base import FolderStore, MaintainedStore, MemoryStore, StoreInfo
from tribalmemory.storage.edge import EdgeStore
from tribalmemory.storage.server import ServerStore

BACKENDS: dict[type, tuple[type, ...]] = {
    EdgeStore: (MemoryStore, MaintainedStore, FolderStore),
    ServerStore: (MemoryStore,),
}
"""Each backend class and the protocols it implements (a new backend is added here)."""
PROTOCOLS = (MemoryStore, MaintainedStore, FolderStore)


def backend_classes() -> set[type]:
    """Every class defined in ``tribalmemory.storage`` that stores memories."""
    found: set[type] = set()
    for info in pkgutil.walk_packages(storage.__path__, "tribalmemory.storage."):
        module = importlib.import_module(info.name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if (
                cls.__module__ == module.__name__
                and cls not in PROTOCOLS
                and all(callable(getattr(cls, name, None)) for name in ("upsert", "search"))
            ):
                found.add(cls)
    return found


def members(protocol: type) -> set[str]:
    """The names a protocol declares: methods, properties and attributes."""
    own = {name for name in vars(protocol) if not name.startswith("_")}
    return own | set(getattr(protocol, "__annotations__", {}))


def parameters(fn: Any) -> list[tuple[str, Any, Any]]:
    """Name, kind and default of each parameter (annotations differ: ``Self`` vs the class)."""
    return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]


def test_every_backend_class_is_listed() -> None:
    assert backend_classes() == set(BACKENDS)


def test_the_protocols_declare_what_callers_use() -> None:
    assert {"begin_rebuild", "finish_rebuild", "abort_rebuild"} <= members(MemoryStore)
    assert {"needs_maintenance", "optimize_needs_bytes", "optimize"} <= members(MaintainedStore)
    assert {"root", "lock", "flush"} <= members(FolderStore)


@pytest.mark.parametrize(
    ("backend", "protocol"),
    [(backend, protocol) for backend, protocols in BACKENDS.items() for protocol in protocols],
    ids=lambda c: c.__name__,
)
def test_backend_implements_each_method_of_its_protocols(backend: type, protocol: type) -> None:
    for name in sorted(members(protocol)):
        declared = inspect.getattr_static(protocol, name, None)
        if declared is None:  # an attribute: checked on open stores below
            continue
        found = inspect.getattr_static(backend, name, None)
        assert found is not None, f"{backend.__name__} lacks {protocol.__name__}.{name}"
        if isinstance(declared, property):
            assert isinstance(found, property), f"{backend.__name__}.{name} is no property"
            continue
        assert parameters(getattr(backend, name)) == parameters(declared), (
            f"{backend.__name__}.{name} takes other parameters than {protocol.__name__}.{name}"
        )


@pytest.mark.parametrize("backend", list(BACKENDS), ids=lambda c: c.__name__)
def test_every_public_method_of_a_backend_is_in_its_protocols(backend: type) -> None:
    """Constructors (class methods) aside: nothing a caller could reach only by duck typing."""
    declared = set().union(*(members(protocol) for protocol in BACKENDS[backend]))
    public = {
        name
        for name in dir(backend)
        if not name.startswith("_")
        and not isinstance(inspect.getattr_static(backend, name), classmethod | staticmethod)
    }
    assert public - declared == set()


def test_open_stores_are_what_they_claim(tmp_path: Path) -> None:
    """The optional parts are found by isinstance on real stores, and so is maintenance."""
    edge = EdgeStore.open(tmp_path / "store", BUNDLED_MODEL, BUNDLED_DIM)
    server = ServerStore.open_local(tmp_path / "qdrant", "memories", BUNDLED_MODEL, BUNDLED_DIM)
    try:
        for store in (edge, server):
            assert isinstance(store.info, StoreInfo)
        assert isinstance(edge, MaintainedStore) and isinstance(edge, FolderStore)
        assert edge.root == tmp_path / "store"
        with edge.lock:  # held, the store still answers this thread (a backup flushes)
            edge.flush()
        assert not isinstance(server, MaintainedStore) and not isinstance(server, FolderStore)
        assert StoreMaintenance.supported(edge) and not StoreMaintenance.supported(server)
    finally:
        edge.close()
        server.close()
