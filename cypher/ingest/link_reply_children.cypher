// Give replies stored before their parent their REPLY_TO link once the parent is stored.
// Parameters: $group_id (str), $ids (list[str], ids of messages just stored).
// Returns: links (int, REPLY_TO links made).
UNWIND $ids AS pid
MATCH (c:Message {group_id: $group_id, reply_to: pid})
USING INDEX c:Message(group_id, reply_to)
MATCH (t:Message {group_id: $group_id, id: pid})
USING INDEX t:Message(group_id, id)
MERGE (c)-[:REPLY_TO]->(t)
RETURN count(*) AS links
