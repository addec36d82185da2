// Erase step 2: delete every message one person of a group sent (text, embedding, links).
// Parameters: $group_id (str), $person_id (str).
// Returns: deleted (int, messages deleted), channels (list[str], channels whose NEXT chain
//   must be relinked). No row when the person does not exist.
MATCH (p:Person {group_id: $group_id, id: $person_id})
OPTIONAL MATCH (m:Message {group_id: $group_id})-[:SOURCE]->(p)
WITH collect(m) AS doomed,
     collect(DISTINCT CASE WHEN m IS NULL THEN null ELSE coalesce(m.channel, '') END) AS channels
FOREACH (m IN doomed | DETACH DELETE m)
RETURN size(doomed) AS deleted, channels
