// Every group (none being erased) with the embedding-space record of its vectors, for
// `graphmem embed --rebuild --all` (graphmem.verbatim.space.stale_groups).
// Parameters: none.
// Returns: group_id (str), embed_model, embed_backend (str or null), embed_dimension (int or null),
//   unrecorded_vectors (bool: no record, and the group holds vectors), by group id.
MATCH (g:Group) WHERE g.erasing IS NULL
WITH g, g.id AS group_id
RETURN group_id, g.embed_model AS embed_model, g.embed_backend AS embed_backend,
       g.embed_dimension AS embed_dimension,
       CASE WHEN g.embed_model IS NULL
                   THEN EXISTS { MATCH (m:Message {group_id: group_id}) WHERE m.embedding IS NOT NULL }
                        OR EXISTS { MATCH (d:Derived {group_id: group_id}) WHERE d.embedding IS NOT NULL }
                   ELSE false END AS unrecorded_vectors
ORDER BY group_id
