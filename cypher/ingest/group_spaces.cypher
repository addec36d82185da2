// Every group (none being erased) with the embedding-space record of its vectors, for
// `graphmem embed --rebuild --all` (graphmem.verbatim.space.stale_groups).
// Parameters: none.
// Returns: group_id (str), embed_model, embed_backend (str or null), embed_dimension (int or null), by group id.
MATCH (g:Group) WHERE g.erasing IS NULL
RETURN g.id AS group_id, g.embed_model AS embed_model, g.embed_backend AS embed_backend,
       g.embed_dimension AS embed_dimension
ORDER BY group_id
