// What search needs to know about one group before it ranks: whether it has messages, its own
// vector index (set by graphmem.store.scope.ensure_vector_scope), how many messages still lack a
// vector (ingest --embed later, until `graphmem embed`) and its freshness key (vector_rev, version)
// that graphmem.recall.cache.GroupCache checks its term statistics and vector matrices against.
// Parameters: $group_id (str).
// Returns: has_messages (bool), vector_index (str or null), vector_rev (int, moved by edits, erasure,
//   late messages and embeds),
//   pending (int), total (int, messages
//   in the whole store, from the count store), version (int, the highest turn_created of the
//   group's messages, -1 when none: the message_order index read backwards, first entry only).
//   embed_model, embed_backend (str or null), embed_dimension (int or null): who wrote the
//   group's vectors (graphmem.verbatim.space); unrecorded_vectors (bool: no record, but vectors
//   written before graphmem recorded spaces); message_seq (int, the arrival number the group's
//   next message gets: every stored message has a seq below it). No row: no such group.
MATCH (g:Group {id: $group_id})
RETURN EXISTS { MATCH (:Message {group_id: $group_id}) } AS has_messages,
       g.vector_index AS vector_index, coalesce(g.vector_rev, 0) AS vector_rev,
       g.embed_model AS embed_model, g.embed_backend AS embed_backend, g.embed_dimension AS embed_dimension,
       CASE WHEN g.embed_model IS NULL
                   THEN EXISTS { MATCH (m:Message {group_id: $group_id}) WHERE m.embedding IS NOT NULL }
                        OR EXISTS { MATCH (d:Derived {group_id: $group_id}) WHERE d.embedding IS NOT NULL }
                   ELSE false END AS unrecorded_vectors,
       COUNT { MATCH (p:PendingEmbedding {group_id: $group_id}) } AS pending,
       COUNT { MATCH (n:Message) } AS total, coalesce(g.message_seq, 0) AS message_seq,
       coalesce(head(COLLECT {
         MATCH (m:Message)
         WHERE m.group_id = $group_id AND m.turn_created IS NOT NULL
         RETURN m.turn_created ORDER BY m.group_id DESC, m.turn_created DESC LIMIT 1
       }), -1) AS version
