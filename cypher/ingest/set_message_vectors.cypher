// Store vectors of messages that lack one and clear their :PendingEmbedding label. A message
// that got its vector meanwhile (a concurrent run) is left as it is, so this is idempotent.
// Parameters: $group_id (str); $rows (list of maps): id (str), embedding (list[float], L2-normed).
// Returns: written (int).
UNWIND $rows AS row
MATCH (m:Message {group_id: $group_id, id: row.id})
USING INDEX m:Message(group_id, id)  // a seek per row, whatever the statistics of the moment
WHERE m:PendingEmbedding
CALL db.create.setNodeVectorProperty(m, 'embedding', row.embedding)
REMOVE m:PendingEmbedding
RETURN count(m) AS written
