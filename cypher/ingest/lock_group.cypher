// Open a write to one group's messages: take the Group node's write lock for the rest of the
// transaction (concurrent writers of the group wait here, so each sees the others' commits) and
// reserve $n arrival numbers. Runs first in every transaction that adds, edits or erases messages.
// Parameters: $group_id (str); $n (int >= 0, arrival numbers to reserve).
// Returns (0 rows when the group does not exist): seq_base (int, first reserved arrival number),
//   erasing (bool, the group is being erased: groups/fence_group; the caller writes nothing).
MATCH (g:Group {id: $group_id})
SET g.message_seq = coalesce(g.message_seq, 0) + $n
RETURN g.message_seq - $n AS seq_base, g.erasing IS NOT NULL AS erasing
