"""Cypher templates, one query per ``<area>/<verb_noun>.cypher`` file (loaded by graphmem.store.db)."""
