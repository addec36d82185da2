// Messages stored in one group (decides whether the group gets its own vector index).
// Parameters: $group_id (str). Returns: messages (int).
MATCH (m:Message {group_id: $group_id})
RETURN count(m) AS messages
