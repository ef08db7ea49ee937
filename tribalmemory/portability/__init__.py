"""Own your data: export/import as JSON lines, backup/restore of the data folder.

- :mod:`.records`: the line format (pure: build and validate records).
- :mod:`.exporter`: memories and episodes as lines, streamed.
- :mod:`.importer`: validate a whole file, plan, then store what is new (by memory id).
- :mod:`.backup`: a consistent copy of the data folder, and restoring one.
- :mod:`.progress`: progress bars on a terminal, silence elsewhere.
"""
