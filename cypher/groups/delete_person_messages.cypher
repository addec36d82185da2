// Erase step 2: delete every message one person of a group sent (text, history, embedding, links).
// Parameters: $group_id (str), $person_id (str).
// Returns: deleted (int, messages deleted), start (float or null: the earliest order_instant
//   deleted, from where the conversation is re-placed). No row when the person does not exist.
MATCH (p:Person {group_id: $group_id, id: $person_id})
OPTIONAL MATCH (m:Message {group_id: $group_id})-[:SOURCE]->(p)
WITH collect(m) AS doomed, min(m.order_instant) AS start
FOREACH (m IN doomed | DETACH DELETE m)
RETURN size(doomed) AS deleted, start
