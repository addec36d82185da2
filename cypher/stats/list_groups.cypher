// Every group with its roster size and message count.
// Parameters: none. Returns: id (str), name (str), persons (int), messages (int).
MATCH (g:Group)
OPTIONAL MATCH (p:Person)-[:MEMBER_OF]->(g)
WITH g, count(p) AS persons
OPTIONAL MATCH (m:Message {group_id: g.id})
RETURN g.id AS id, g.name AS name, persons, count(m) AS messages
ORDER BY id
