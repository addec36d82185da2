// After new messages were placed: when any of them landed before a message that was already
// stored (a late message), the positions (turn_created) of the messages after it moved, so
// vector matrices cached by position (graphmem.recall.cache) cannot be brought up to date by
// reading the positions above their own: the group's vector_rev moves and they are reloaded.
// An append reads only the new messages' index entries.
// Parameters: $group_id (str), $ids (list[str], the ids of the messages this write created).
// Returns: inserted (bool, vector_rev moved).
MATCH (m:Message)
USING INDEX m:Message(group_id, id)
WHERE m.group_id = $group_id AND m.id IN $ids
WITH min(m.turn_created) AS first
MATCH (g:Group {id: $group_id})
WITH g, EXISTS {
  MATCH (x:Message)
  USING INDEX x:Message(group_id, turn_created)
  WHERE x.group_id = $group_id AND x.turn_created > first AND NOT x.id IN $ids
} AS inserted
FOREACH (_ IN CASE WHEN inserted THEN [1] ELSE [] END | SET g.vector_rev = coalesce(g.vector_rev, 0) + 1)
RETURN inserted
