// Upsert roster members of one group and their MEMBER_OF link.
// Parameters: $group_id (str); $rows (list of maps): id (str, speaker_id or display name),
//   name (str, latest display name), speaker_id (str, "" when the source has none),
//   aliases (list[str], display names seen in this batch).
// Returns: created (int, persons created by this call).
MATCH (g:Group {id: $group_id})
UNWIND $rows AS row
MERGE (p:Person {group_id: $group_id, id: row.id})
  ON CREATE SET p.name = row.name, p.speaker_id = row.speaker_id, p.aliases = [], p.created_new = true
SET p.name = row.name,
    p.aliases = p.aliases + [a IN row.aliases WHERE NOT a IN p.aliases]
MERGE (p)-[:MEMBER_OF]->(g)
WITH p, coalesce(p.created_new, false) AS created
REMOVE p.created_new
RETURN sum(CASE WHEN created THEN 1 ELSE 0 END) AS created
