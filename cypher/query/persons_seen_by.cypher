// Persons of one group who had sent a message at or before an instant (the as-of roster).
// Parameters: $group_id (str); $max_instant (float, epoch seconds, the as-of instant).
// Returns: id (str), one row per Person with at least one message at or before the instant.
MATCH (p:Person {group_id: $group_id})-[:MEMBER_OF]->(:Group {id: $group_id})
WHERE EXISTS {
  MATCH (m:Message {group_id: $group_id})-[:SOURCE]->(p)
  WHERE m.instant <= $max_instant
}
RETURN p.id AS id
