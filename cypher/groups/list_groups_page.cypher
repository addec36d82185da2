// One page of the groups (memory spaces) of the store, by id, with their sizes.
// Parameters: $after (str, list groups whose id sorts after it; "" for the first page);
//   $ids (list[str] or null: only these group ids, the groups a scoped key reaches; null = all);
//   $limit (int, rows at most).
// Returns, ordered by id: id (str), name (str, the id when the group has none), persons (int),
//   messages (int).
MATCH (g:Group)
WHERE g.id > $after AND ($ids IS NULL OR g.id IN $ids)
WITH g ORDER BY g.id LIMIT $limit
CALL (g) {
  OPTIONAL MATCH (p:Person {group_id: g.id})-[:MEMBER_OF]->(g)
  RETURN count(p) AS persons
}
CALL (g) {
  OPTIONAL MATCH (m:Message {group_id: g.id})
  RETURN count(m) AS messages
}
RETURN g.id AS id, coalesce(g.name, g.id) AS name, persons, messages
ORDER BY id
