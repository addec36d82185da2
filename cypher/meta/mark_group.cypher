// Record on the Group node that the group has its own vector index (read by search).
// Parameters: $group_id (str), $index (str, index name). Returns: id (str).
MATCH (g:Group {id: $group_id})
SET g.vector_index = $index
RETURN g.id AS id
