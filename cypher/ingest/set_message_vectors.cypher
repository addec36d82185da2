// Store vectors of messages that lack one and clear their :PendingEmbedding label. A message
// that got its vector meanwhile (a concurrent run) is left as it is, so this is idempotent; a
// message whose text changed since it was read (an edit during `graphmem embed`) is left
// pending, so no message keeps the vector of a text it no longer has.
// Parameters: $group_id (str); $rows (list of maps): id (str), text (str, the text that was
//   encoded), embedding (list[float], L2-normed).
// Moves the group's vector_rev when a vector was written (graphmem.vector_cache).
// Returns: written (int).
UNWIND $rows AS row
MATCH (m:Message {group_id: $group_id, id: row.id})
USING INDEX m:Message(group_id, id)  // a seek per row, whatever the statistics of the moment
WHERE m:PendingEmbedding AND m.text = row.text
CALL db.create.setNodeVectorProperty(m, 'embedding', row.embedding)
REMOVE m:PendingEmbedding
WITH count(m) AS written
CALL (written) {
  WITH written WHERE written > 0  // the group's vector revision: process caches of its vectors reload
  MATCH (g:Group {id: $group_id})
  SET g.vector_rev = coalesce(g.vector_rev, 0) + 1
}
RETURN written
