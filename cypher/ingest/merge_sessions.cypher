// Upsert sessions of one group and their IN_GROUP link.
// Parameters: $group_id (str); $rows (list of maps): id (str), channel (str), index (int),
//   ts (str, ISO-8601 or "").
// Returns: created (int).
MATCH (g:Group {id: $group_id})
UNWIND $rows AS row
MERGE (s:Session {group_id: $group_id, id: row.id})
  ON CREATE SET s.channel = row.channel, s.index = row.index, s.ts = row.ts, s.created_new = true
MERGE (s)-[:IN_GROUP]->(g)
WITH s, coalesce(s.created_new, false) AS created
REMOVE s.created_new
RETURN sum(CASE WHEN created THEN 1 ELSE 0 END) AS created
