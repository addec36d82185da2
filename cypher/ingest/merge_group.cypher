// Create the group (memory space) if missing; never renames an existing one. A new group's
// vector_rev starts at a random 52-bit number, so a group deleted and loaded again under the
// same id never matches vector matrices a process cached for the old one (graphmem.recall.cache).
// Parameters: $group_id (str), $group_name (str).
// Returns: id (str), created (bool), vector_index (str or null: the group's own vector index,
//   graphmem.store.scope).
MERGE (g:Group {id: $group_id})
  ON CREATE SET g.name = $group_name, g.created_new = true,
                g.vector_rev = toInteger(rand() * 4503599627370496.0)
WITH g, coalesce(g.created_new, false) AS created
REMOVE g.created_new
RETURN g.id AS id, created, g.vector_index AS vector_index
