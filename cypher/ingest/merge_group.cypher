// Create the group (memory space) if missing; never renames an existing one.
// Parameters: $group_id (str), $group_name (str).
// Returns: id (str), created (bool), vector_index (str or null: the group's own vector index,
//   graphmem.scope).
MERGE (g:Group {id: $group_id})
  ON CREATE SET g.name = $group_name, g.created_new = true
WITH g, coalesce(g.created_new, false) AS created
REMOVE g.created_new
RETURN g.id AS id, created, g.vector_index AS vector_index
