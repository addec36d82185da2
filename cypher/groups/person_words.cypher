// Erase, read first: every text one person of a group wrote (current and earlier versions of
// their messages), to find derived records that quote them (graphmem.groups.quoting_records).
// Parameters: $group_id (str), $person_id (str).
// Returns one row per message: id (str), texts (list[str], the stored text then its text_history).
MATCH (p:Person {group_id: $group_id, id: $person_id})
MATCH (m:Message {group_id: $group_id})-[:SOURCE]->(p)
RETURN m.id AS id, [m.text] + coalesce(m.text_history, []) AS texts
