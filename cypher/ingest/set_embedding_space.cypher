// Replace the group's embedding-space record (graphmem embed --rebuild, after its vectors were
// dropped) and move vector_rev, so caches of the old vectors are not used again.
// Parameters: $group_id (str), $model (str), $backend (str), $dimension (int).
// Returns: model (str). No row: no such group.
MATCH (g:Group {id: $group_id})
SET g.embed_model = $model, g.embed_backend = $backend, g.embed_dimension = $dimension,
    g.vector_rev = coalesce(g.vector_rev, 0) + 1
RETURN g.embed_model AS model
