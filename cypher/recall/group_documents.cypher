// Every fulltext document of one group (for group-local term statistics).
// Parameters: $group_id (str). Returns: doc (str, the message's search_text).
MATCH (m:Message {group_id: $group_id})
RETURN m.search_text AS doc
