// Roster of one group: every Person that is a member, with the number of messages they sent.
// Parameters: $group_id (str).
// Returns: id (str), name (str), speaker_id (str), aliases (list[str]), messages (int),
//   ordered by name then id.
MATCH (p:Person {group_id: $group_id})-[:MEMBER_OF]->(:Group {id: $group_id})
OPTIONAL MATCH (m:Message {group_id: $group_id})-[:SOURCE]->(p)
WITH p, count(m) AS messages
RETURN p.id AS id, p.name AS name, coalesce(p.speaker_id, '') AS speaker_id,
       coalesce(p.aliases, []) AS aliases, messages
ORDER BY name, id
