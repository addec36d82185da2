// Number of messages in one group and in the whole store.
// Parameters: $group_id (str). Returns: group_count (int), total_count (int).
OPTIONAL MATCH (m:Message {group_id: $group_id})
WITH count(m) AS group_count
OPTIONAL MATCH (n:Message)
RETURN group_count, count(n) AS total_count
