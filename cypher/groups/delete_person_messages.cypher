// Erase step 2: delete every message one person of a group sent (text, history, embedding, links).
// Parameters: $group_id (str), $person_id (str).
// Moves the group's vector_rev when messages were deleted (graphmem.recall.cache).
// Returns: deleted (int, messages deleted), start (float or null: the earliest order_instant
//   deleted, from where the conversation is re-placed). No row when the person does not exist.
MATCH (p:Person {group_id: $group_id, id: $person_id})
OPTIONAL MATCH (m:Message {group_id: $group_id})-[:SOURCE]->(p)
WITH collect(m) AS doomed, min(m.order_instant) AS start
FOREACH (m IN doomed | DETACH DELETE m)
WITH size(doomed) AS deleted, start
CALL (deleted) {
  WITH deleted WHERE deleted > 0  // the group's vector revision: process caches of its vectors reload
  MATCH (g:Group {id: $group_id})
  SET g.vector_rev = coalesce(g.vector_rev, 0) + 1
}
RETURN deleted, start
