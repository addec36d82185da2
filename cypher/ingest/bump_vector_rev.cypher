// Move a group's vector_rev: vector matrices cached for it (graphmem.recall.cache) are reloaded.
// For writes that move stored messages' positions wholesale (re-placing a group's order).
// Parameters: $group_id (str). Returns: vector_rev (int, the new value).
MATCH (g:Group {id: $group_id})
SET g.vector_rev = coalesce(g.vector_rev, 0) + 1
RETURN g.vector_rev AS vector_rev
