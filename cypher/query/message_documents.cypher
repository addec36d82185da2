// Fulltext documents of some messages of one group, with speaker and instant.
// Parameters: $group_id (str), $ids (list[str]).
// Returns: id (str), doc (str, search_text), person_id (str), instant (float epoch seconds or null).
UNWIND $ids AS mid
MATCH (m:Message {group_id: $group_id, id: mid})-[:SOURCE]->(p:Person)
RETURN m.id AS id, m.search_text AS doc, p.id AS person_id, m.instant AS instant
