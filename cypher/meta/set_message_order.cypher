// Migration: give one group's messages their order key and the group its arrival counter.
// Parameters: $group_id (str); $total (int, messages of the group: the next arrival number);
//   $rows (list of maps): id (str), order_instant (float, epoch
//   seconds), seq (int).
// Returns: updated (int).
OPTIONAL MATCH (g:Group {id: $group_id})
FOREACH (x IN CASE WHEN g IS NULL THEN [] ELSE [g] END | SET x.message_seq = $total)
WITH DISTINCT 1 AS one
UNWIND $rows AS row
MATCH (m:Message {group_id: $group_id, id: row.id})
SET m.order_instant = row.order_instant, m.seq = row.seq
RETURN count(m) AS updated
