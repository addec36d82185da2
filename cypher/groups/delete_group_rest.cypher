// Erase one group, the sweep after groups/delete_group_nodes: at most $batch nodes of any
// other label that carry the group's id (a label added later is erased without a change here),
// with their relationships. The group's derive jobs stay as receipts (groups/fence_group) and
// the Group node goes last (groups/delete_group). Scans every node: it runs once or twice per
// erasure, when the indexed step has left nothing.
// Parameters: $group_id (str); $batch (int >= 1, nodes per call).
// Returns: deleted (int, nodes deleted by this call).
MATCH (n)
WHERE n.group_id = $group_id AND NOT n:DeriveJob AND NOT n:Group
WITH n LIMIT $batch
DETACH DELETE n
RETURN count(*) AS deleted
