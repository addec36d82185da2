// Write position of the group's latest message (message_order index, no scan): the version of
// the group's term statistics. Parameters: $group_id (str).
// Returns: last (int, the highest turn_created; no row when the group has no messages).
MATCH (m:Message {group_id: $group_id})
WHERE m.turn_created IS NOT NULL
RETURN m.turn_created AS last
ORDER BY m.turn_created DESC
LIMIT 1
