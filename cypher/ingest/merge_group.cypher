// Open a load of one group: create the group (memory space) if missing, never renaming an
// existing one, and take its write lock for the rest of the transaction, as ingest/lock_group
// does (concurrent writers of the group wait here). A new group's vector_rev starts at a random
// 52-bit number, so a group deleted and loaded again under the same id never matches vector
// matrices a process cached for the old one (graphmem.recall.cache).
// A load that writes vectors records their space when the group has none and holds no vectors
// written before graphmem recorded spaces (graphmem.verbatim.space).
// Parameters: $group_id (str), $group_name (str), $embed_model, $embed_backend (str or null),
//   $embed_dimension (int or null; null: this load writes no vectors).
// Returns: id (str), created (bool), vector_index (str or null: the group's own vector index,
//   graphmem.store.scope), seq_base (int, the group's next arrival number), embed_model,
//   embed_backend, embed_dimension (the group's record after the statement, or null),
//   unrecorded_vectors (bool: no record, and the group holds vectors), erasing (bool, the group is
//   being erased: groups/fence_group; the caller writes nothing).
MERGE (g:Group {id: $group_id})
  ON CREATE SET g.name = $group_name, g.created_new = true,
                g.vector_rev = toInteger(rand() * 4503599627370496.0)
WITH g, CASE WHEN g.embed_model IS NULL
                    THEN EXISTS { MATCH (m:Message {group_id: $group_id}) WHERE m.embedding IS NOT NULL }
                         OR EXISTS { MATCH (d:Derived {group_id: $group_id}) WHERE d.embedding IS NOT NULL }
                    ELSE false END AS unrecorded
SET g.message_seq = coalesce(g.message_seq, 0),
    g.embed_model = coalesce(g.embed_model, CASE WHEN unrecorded THEN null ELSE $embed_model END),
    g.embed_backend = coalesce(g.embed_backend, CASE WHEN unrecorded THEN null ELSE $embed_backend END),
    g.embed_dimension = coalesce(g.embed_dimension, CASE WHEN unrecorded THEN null ELSE $embed_dimension END)
WITH g, unrecorded, coalesce(g.created_new, false) AS created
REMOVE g.created_new
RETURN g.id AS id, created, g.vector_index AS vector_index, g.message_seq AS seq_base,
       g.embed_model AS embed_model, g.embed_backend AS embed_backend, g.embed_dimension AS embed_dimension,
       unrecorded AS unrecorded_vectors, g.erasing IS NOT NULL AS erasing
