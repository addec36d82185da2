// Everything `ask` needs to know about one group before it ranks, in one round trip: the
// columns of search/group_state (has_messages, vector_index, pending, total, version) and the
// roster of query/list_members (persons only, no message counts), plus the group's name (the
// GROUP row of System 2).
// Parameters: $group_id (str).
// Returns: has_messages (bool), vector_index (str or null), vector_rev (int, graphmem.recall.cache),
//   embed_model, embed_backend, embed_dimension, unrecorded_vectors, pending (int), total (int),
//   message_seq (int, as search/group_state), version
//   (int, -1 when the group has no messages), name (str, the group's name or its id), members
//   (list of {id, name, speaker_id, aliases}, ordered by name then id). No row: no such group.
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
       }), -1) AS version,
       coalesce(g.name, g.id) AS name,
       COLLECT {
         MATCH (p:Person {group_id: $group_id})-[:MEMBER_OF]->(g)
         WITH p ORDER BY p.name, p.id
         RETURN {id: p.id, name: p.name, speaker_id: coalesce(p.speaker_id, ''),
                 aliases: coalesce(p.aliases, [])}
       } AS members
