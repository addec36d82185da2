// Record which model and backend write the group's vectors, unless it has a record already or
// holds vectors without one (written before graphmem recorded spaces: they are plain
// all-MiniLM-L6-v2's and are not claimed by another space); atomic under the Group node's write
// lock, so two processes that start writing vectors at once with different embedders cannot both
// record theirs (graphmem.verbatim.space).
// Parameters: $group_id (str), $model (str), $backend (str), $dimension (int).
// Returns: model, backend (str or null), dimension (int or null): the group's record after the
//   statement; unrecorded_vectors (bool: no record, and the group holds vectors).
//   No row: no such group.
MATCH (g:Group {id: $group_id})
WITH g, CASE WHEN g.embed_model IS NULL
                    THEN EXISTS { MATCH (m:Message {group_id: $group_id}) WHERE m.embedding IS NOT NULL }
                         OR EXISTS { MATCH (d:Derived {group_id: $group_id}) WHERE d.embedding IS NOT NULL }
                    ELSE false END AS unrecorded
SET g.embed_model = coalesce(g.embed_model, CASE WHEN unrecorded THEN null ELSE $model END),
    g.embed_backend = coalesce(g.embed_backend, CASE WHEN unrecorded THEN null ELSE $backend END),
    g.embed_dimension = coalesce(g.embed_dimension, CASE WHEN unrecorded THEN null ELSE $dimension END)
RETURN g.embed_model AS model, g.embed_backend AS backend, g.embed_dimension AS dimension,
       unrecorded AS unrecorded_vectors
