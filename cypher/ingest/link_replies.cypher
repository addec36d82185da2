// Link messages to the message they reply to, when both are stored in the group (idempotent).
// Parameters: $group_id (str); $rows (list of maps): id (str), reply_to (str).
// Returns: links (int).
UNWIND $rows AS row
MATCH (m:Message {group_id: $group_id, id: row.id})
USING INDEX m:Message(group_id, id)
MATCH (t:Message {group_id: $group_id, id: row.reply_to})
USING INDEX t:Message(group_id, id)
MERGE (m)-[:REPLY_TO]->(t)
RETURN count(*) AS links
