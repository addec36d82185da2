// Roster of one group without message counts: every Person that is a member (ask's roster).
// Counting each person's messages reads every message of the group; this reads the persons only.
// Parameters: $group_id (str).
// Returns: id (str), name (str), speaker_id (str), aliases (list[str]), ordered by name then id.
MATCH (p:Person {group_id: $group_id})-[:MEMBER_OF]->(:Group {id: $group_id})
RETURN p.id AS id, p.name AS name, coalesce(p.speaker_id, '') AS speaker_id,
       coalesce(p.aliases, []) AS aliases
ORDER BY name, id
