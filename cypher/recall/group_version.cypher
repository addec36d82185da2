// Write position of the group's latest message: the version of the group's term statistics.
// Ordered by (group_id, turn_created) so that the planner reads the message_order index
// backwards and stops at the first entry (2 db hits; ordering by turn_created alone made it
// read and sort every message of the group). Parameters: $group_id (str).
// Returns: last (int, the highest turn_created; no row when the group has no messages).
MATCH (m:Message)
WHERE m.group_id = $group_id AND m.turn_created IS NOT NULL
RETURN m.turn_created AS last
ORDER BY m.group_id DESC, m.turn_created DESC
LIMIT 1
