// What search needs to know about one group before it ranks: whether it has messages, its own
// vector index (set by graphmem.scope.ensure_vector_scope) and how many messages still lack a
// vector (ingest --embed later, until `graphmem embed`).
// Parameters: $group_id (str).
// Returns: has_messages (bool), vector_index (str or null), pending (int), total (int, messages
//   in the whole store, from the count store). No row: no such group.
MATCH (g:Group {id: $group_id})
RETURN EXISTS { MATCH (:Message {group_id: $group_id}) } AS has_messages,
       g.vector_index AS vector_index,
       COUNT { MATCH (p:PendingEmbedding {group_id: $group_id}) } AS pending,
       COUNT { MATCH (n:Message) } AS total
