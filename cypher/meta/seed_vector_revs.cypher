// Migration: groups without a vector_rev (loaded by the first-load importer, or stored before
// it existed) get a random 52-bit one, as ingest/merge_group gives a new group, so a process's
// cached vector matrices of a group that was replaced never pass for the new one
// (graphmem.recall.cache). Idempotent: a group that has one keeps it.
// Parameters: none. Returns: seeded (int).
MATCH (g:Group)
WHERE g.vector_rev IS NULL
SET g.vector_rev = toInteger(rand() * 4503599627370496.0)
RETURN count(g) AS seeded
