"""The episode engine: a plugin on the memory service's write-time hook."""
