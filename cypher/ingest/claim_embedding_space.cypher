// Record which model and backend write the group's vectors, unless it has a record already;
// atomic under the Group node's write lock, so two processes that start writing vectors at
// once with different embedders cannot both record theirs (graphmem.verbatim.space).
// Parameters: $group_id (str), $model (str), $backend (str), $dimension (int).
// Returns: model, backend (str), dimension (int): the group's record after the statement.
//   No row: no such group.
MATCH (g:Group {id: $group_id})
SET g.embed_model = coalesce(g.embed_model, $model),
    g.embed_backend = coalesce(g.embed_backend, $backend),
    g.embed_dimension = coalesce(g.embed_dimension, $dimension)
RETURN g.embed_model AS model, g.embed_backend AS backend, g.embed_dimension AS dimension
