// Erase one group, the last step (after groups/delete_group_nodes and groups/delete_group_rest
// have left nothing of it): the Group node itself, with its relationships. Idempotent.
// Parameters: $group_id (str).
// Returns: deleted (int, 0 or 1).
OPTIONAL MATCH (g:Group {id: $group_id})
WITH collect(g) AS doomed
FOREACH (g IN doomed | DETACH DELETE g)
RETURN size(doomed) AS deleted
