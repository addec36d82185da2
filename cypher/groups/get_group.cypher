// One group (memory space) with its size.
// Parameters: $group_id (str).
// Returns: id (str), name (str), persons (int), messages (int); no row for an unknown group.
MATCH (g:Group {id: $group_id})
CALL (g) {
  OPTIONAL MATCH (p:Person {group_id: $group_id})-[:MEMBER_OF]->(g)
  RETURN count(p) AS persons
}
CALL (g) {
  OPTIONAL MATCH (m:Message {group_id: $group_id})
  RETURN count(m) AS messages
}
RETURN g.id AS id, coalesce(g.name, g.id) AS name, persons, messages
