// Derived records of the group with their content, after $after_id (id order), for re-embedding
// (graphmem embed --rebuild).
// Parameters: $group_id (str), $after_id (str, "" for the first page), $limit (int).
// Returns: id (str), content (str), ordered by id.
MATCH (d:Derived {group_id: $group_id})
WHERE d.id > $after_id AND d.embedding IS NOT NULL
RETURN d.id AS id, coalesce(d.content, '') AS content
ORDER BY d.id
LIMIT $limit
