// Relationship counts by type, for the whole store or one group (by the start node's group).
// Parameters: $group_id (str or null). Returns: type (str), count (int).
MATCH (a)-[r]->()
WHERE $group_id IS NULL OR a.group_id = $group_id
RETURN type(r) AS type, count(*) AS count
ORDER BY type
